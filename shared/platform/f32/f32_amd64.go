package f32

func init() { kernel = lanes4x4 }

// lanes4x4 is Lanes4x4 in SSE (f32_amd64.s).
//
//go:noescape
func lanes4x4(q, ex []float32) [16]float32
