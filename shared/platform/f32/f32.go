// Package f32 holds the float32 kernel of the ExpertGate's example
// similarities: the lanes of four dot products at once. It gives the bits
// of the plain Go loop it stands for, on each architecture, so scores,
// calibrations fitted on them and stored figures do not move with it:
//
//   - amd64 (f32_amd64.s, SSE): a lane of MULPS and ADDPS rounds as Go's
//     scalar MULSS and ADDSS do at GOAMD64=v1 and v2 (the default). At v3
//     Go fuses the loop's multiply and add, and routing's dot4 test says
//     the bits differ: build amd64 at v1 or v2.
//   - arm64 (f32_arm64.s, NEON; the functions' architecture): Go fuses
//     the loop's multiply and add (FMADDS), and FMLA fuses them lane by
//     lane. make test vets this package for arm64 and runs its check
//     (f32check, as localstack/f32check) under qemu-aarch64 (make
//     test-arm64; localstack/qemu.sh installs it).
//   - elsewhere: the Go loop (kernel is LanesGo). No build tag excludes a
//     file (make golint's rule: one vet pass sees every file); the file
//     names choose the architecture.
//
// Go does not vectorize: a gate query at 1,000 agents spent a fifth of its
// time in 160 dot products four scalar lanes wide (docs/measurements.md).
package f32

// Lanes4x4 returns the four lanes of q's dot product with each of the four
// vectors ex holds one after another (len(q) floats each), over the first
// len(q)&^3 values: lane l of vector k, at 4*k+l, is Σ q[i]·ex_k[i] over
// i ≡ l (mod 4), summed in i's order from zero. The caller adds the tail
// and the lanes. ex must hold at least 4·len(q) floats.
func Lanes4x4(q, ex []float32) [16]float32 {
	if len(q) == 0 {
		return [16]float32{}
	}
	_ = ex[4*len(q)-1] // the kernel reads four vectors of ex
	return kernel(q, ex)
}

// kernel is Lanes4x4's loop: LanesGo, or the architecture's assembly
// (f32_amd64.go, f32_arm64.go). The lanes are returned, not written
// through a pointer: a pointer given to a function value escapes, and
// every call allocated its 64 bytes.
var kernel = LanesGo

// LanesGo is Lanes4x4's Go loop, vector by vector: the loop the kernels
// give the bits of, which the other architectures run (f32check compares
// the two). The package has no test files of its own: make test-arm64
// vets it for arm64, and a test file's imports (the testing package) would
// have to be compiled for arm64 for that, about 10 s of a cold CI run.
func LanesGo(q, ex []float32) (out [16]float32) {
	d, n := len(q), len(q)&^3
	for k := range 4 {
		e := ex[k*d : k*d+n]
		var s0, s1, s2, s3 float32
		for i := 0; i+4 <= n; i += 4 {
			s0 += q[i] * e[i]
			s1 += q[i+1] * e[i+1]
			s2 += q[i+2] * e[i+2]
			s3 += q[i+3] * e[i+3]
		}
		out[4*k], out[4*k+1], out[4*k+2], out[4*k+3] = s0, s1, s2, s3
	}
	return out
}
