package f32_test

import (
	"math/rand/v2"
	"testing"

	"github.com/conclave-ai/conclave/shared/platform/f32"
	"github.com/conclave-ai/conclave/shared/platform/f32/f32check"
)

// The kernel gives the Go loop's bits, every length, scale and sign
// (f32check.Run). make test runs this on amd64 and, as the program
// localstack/f32check under qemu-aarch64, on arm64 (make test-arm64).
func TestLanes4x4IsTheLoopBitForBit(t *testing.T) {
	if err := f32check.Run(); err != nil {
		t.Fatal(err)
	}
}

// The Go loop the other architectures run gives the same bits as the
// kernel of this one.
func TestTheGoLoopIsTheKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, d := range []int{3, 4, 9, 256} {
		q, ex := f32check.Values(r, d, 1), f32check.Values(r, 4*d, 1)
		if kern, loop := f32.Lanes4x4(q, ex), f32.LanesGo(q, ex); kern != loop {
			t.Fatalf("dim %d: kernel %v, Go loop %v", d, kern, loop)
		}
	}
}
