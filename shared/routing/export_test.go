package routing

// FullScoring makes ix score every skill's semantic similarity exactly, in
// one stage: the reference two-stage selection is compared with.
func FullScoring(ix *Index) {
	ix.domainNames, ix.docDomain, ix.undomained = nil, nil, -1
}

// TwoStage reports whether ix selects in two stages.
func TwoStage(ix *Index) bool { return ix.twoStage() }

// CompareEveryExample makes a two-stage ix compare every candidate's examples
// (no pre-selection by their centroid).
func CompareEveryExample(ix *Index) { ix.exCentroids = nil }

// PreselectsExamples reports whether ix pre-selects the skills whose
// examples it compares.
func PreselectsExamples(ix *Index) bool { return ix.exCentroids != nil }

// QueryProbabilities are ix's classifier's class probabilities for a
// message (text, its vector v) as a gate query computes them: through its
// tokens when ix's embedder decomposes (tokens.go).
func QueryProbabilities(ix *Index, text string, v []float64) []float32 {
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	q := query{text: text, vec: unitVector(v, ix.dim), cls: ix.classifier.Load()}
	p := make([]float32, q.cls.c.classes())
	ix.probabilities(&q, sc, nil, p)
	return p
}

// CentroidCosines are a message's cosines to a two-stage ix's domain and
// examples' centroids through its tokens (nil when they cannot stand for
// v), and as dot products with v.
func CentroidCosines(ix *Index, text string, v []float64) (tokens, direct []float64) {
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	q := query{text: text, vec: unitVector(v, ix.dim)}
	qs := ix.querySimsOf(&q, sc)
	ng := len(ix.domainNames)
	for k := range ng + len(ix.docs) {
		var c []float32
		if k < ng {
			c = ix.centroids[k*ix.dim : (k+1)*ix.dim]
		} else if d := k - ng; ix.exStart[d] != ix.exStart[d+1] {
			c = ix.exCentroids[d*ix.dim : (d+1)*ix.dim]
		} else {
			continue
		}
		direct = append(direct, dot(q.vec, c))
		if qs != nil {
			tokens = append(tokens, qs.at(k))
		}
	}
	return tokens, direct
}

// LogitsByTokens reports whether ix's classifier sums its dense logits
// over a message's tokens.
func LogitsByTokens(ix *Index) bool {
	cl := ix.classifier.Load()
	return cl != nil && cl.tok != nil
}
