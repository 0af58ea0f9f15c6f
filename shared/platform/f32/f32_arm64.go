package f32

func init() { kernel = lanes4x4 }

// lanes4x4 is Lanes4x4 in NEON (f32_arm64.s).
//
//go:noescape
func lanes4x4(q, ex []float32) [16]float32
