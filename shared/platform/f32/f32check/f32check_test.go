package f32check_test

import (
	"testing"

	"github.com/conclave-ai/conclave/shared/platform/f32/f32check"
)

// The kernel gives the Go loop's bits, every length, scale and sign, and
// LanesGo gives the kernel's (f32check.Run). make test runs this on amd64
// and, as the program localstack/f32check under qemu-aarch64, on arm64
// (make test-arm64).
func TestTheKernelIsTheLoopBitForBit(t *testing.T) {
	if err := f32check.Run(); err != nil {
		t.Fatal(err)
	}
}
