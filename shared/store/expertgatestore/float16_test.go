package expertgatestore

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The half floats of the classifier's weights: exact values keep their
// bits, others round to the nearest half (ties to even), beyond the range
// clamp, and infinities and NaN stay what they are.
func TestHalfFloats(t *testing.T) {
	smallest := float32(math.Ldexp(1, -24)) // the smallest subnormal half
	cases := []struct {
		name string
		in   float32
		bits uint16
		out  float32
	}{
		{"zero", 0, 0x0000, 0},
		{"one", 1, 0x3c00, 1},
		{"minus two", -2, 0xc000, -2},
		{"a third", 1.0 / 3, 0x3555, 0.333251953125},
		{"the largest half", 65504, 0x7bff, 65504},
		{"the smallest normal half", float32(math.Ldexp(1, -14)), 0x0400, float32(math.Ldexp(1, -14))},
		{"the largest subnormal half", float32(math.Ldexp(1023, -24)), 0x03ff, float32(math.Ldexp(1023, -24))},
		{"the smallest subnormal half", smallest, 0x0001, smallest},
		{"minus the smallest subnormal", -smallest, 0x8001, -smallest},
		// 1 + 2⁻¹¹ is halfway between 1 and 1 + 2⁻¹⁰: to the even, 1.
		{"a tie to the even below", 1 + float32(math.Ldexp(1, -11)), 0x3c00, 1},
		// 1 + 3·2⁻¹¹ is halfway between 1 + 2⁻¹⁰ (odd) and 1 + 2⁻⁹: up.
		{"a tie to the even above", 1 + 3*float32(math.Ldexp(1, -11)), 0x3c02, 1 + float32(math.Ldexp(1, -9))},
		{"just past a tie", 1 + float32(math.Ldexp(1, -11)) + float32(math.Ldexp(1, -20)), 0x3c01, 1 + float32(math.Ldexp(1, -10))},
		{"a carry into the exponent", 2 - float32(math.Ldexp(1, -12)), 0x4000, 2},
		{"a subnormal tie to the even below", float32(math.Ldexp(1, -25)), 0x0000, 0},
		{"a subnormal tie to the even above", float32(math.Ldexp(3, -25)), 0x0002, 2 * smallest},
		{"a subnormal rounding up to a normal", float32(math.Ldexp(2047, -25)), 0x0400, float32(math.Ldexp(1, -14))},
		{"below half a subnormal", float32(math.Ldexp(1, -26)), 0x0000, 0},
		{"a float32 subnormal", math.SmallestNonzeroFloat32, 0x0000, 0},
		{"past the range, clamped", 1e6, 0x7bff, 65504},
		{"just past the range, clamped", 65520, 0x7bff, 65504},
		{"the largest float32, clamped", -math.MaxFloat32, 0xfbff, -65504},
		{"infinity", float32(math.Inf(1)), 0x7c00, float32(math.Inf(1))},
		{"minus infinity", float32(math.Inf(-1)), 0xfc00, float32(math.Inf(-1))},
	}
	for _, c := range cases {
		h := toHalf(c.in)
		assert.Equal(t, c.bits, h, "%s: %#04x", c.name, h)
		assert.Equal(t, c.out, fromHalf(h), c.name)
	}

	negZero := float32(math.Copysign(0, -1))
	assert.Equal(t, uint16(0x8000), toHalf(negZero))
	assert.True(t, math.Signbit(float64(fromHalf(0x8000))), "-0 keeps its sign")

	nan := toHalf(float32(math.NaN()))
	assert.Equal(t, uint16(0x7c00), nan&0x7c00, "a NaN's exponent")
	assert.NotZero(t, nan&0x3ff, "a NaN's mantissa")
	assert.True(t, math.IsNaN(float64(fromHalf(nan))), "NaN stays NaN")
	assert.True(t, math.IsNaN(float64(fromHalf(0x7c01))), "a signaling half NaN reads as NaN")
}

// Every half float reads back to itself, and from a float32 within half
// a unit in the last place (2⁻¹¹ relative, for normal halves).
func TestHalfFloatsRoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := fromHalf(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		assert.Equal(t, uint16(h), toHalf(f), "%#04x", h)
	}
	for i := range 100_000 {
		x := float32(math.Sin(float64(i))) * float32(math.Ldexp(1, i%30-14))
		got := fromHalf(toHalf(x))
		if math.Abs(float64(x)) < math.Ldexp(1, -14) {
			assert.InDelta(t, x, got, math.Ldexp(1, -25), "%g", x)
			continue
		}
		assert.InEpsilon(t, x, got, math.Ldexp(1, -11), "%g", x)
	}
}
