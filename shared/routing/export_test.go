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
