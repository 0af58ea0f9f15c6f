package plans

// Resolved is each step's writer and report type (Known.Resolve), for
// tests.
func Resolved(p ExecutionPlan) [][2]string {
	out := make([][2]string, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = [2]string{s.writer, s.report}
	}
	return out
}
