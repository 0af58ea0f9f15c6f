// Command f32check runs shared/platform/f32's bit-for-bit check
// (f32check.Run) and panics when it fails: make test-arm64 builds it for
// arm64 and runs it under qemu-aarch64, where the NEON kernel runs.
package main

import "github.com/conclave-ai/conclave/shared/platform/f32/f32check"

func main() {
	if err := f32check.Run(); err != nil {
		panic("shared/platform/f32: " + err.Error())
	}
	println("shared/platform/f32: the kernel gives the loop's bits")
}
