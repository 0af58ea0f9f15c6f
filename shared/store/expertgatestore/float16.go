package expertgatestore

import "math"

// A classifier's weights are stored as IEEE 754 half floats (binary16):
// at routing's bounds a team's weights are 2.6 million floats, 10 MB as
// float32, 5 MB as halves, and a weight's 11 significant bits (a relative
// error of at most 2⁻¹¹) change no probability the gate compares to a
// threshold of two decimals. The conversion is written out here rather
// than taken from a module: it is twenty lines, and these are the only
// half floats of the code.

// maxHalfBits is float32(65504), the largest finite half float.
const maxHalfBits = 0x477fe000

// toHalf rounds f to the nearest half float, ties to even. A finite value
// beyond the half range is clamped to ±65504 rather than made infinite: a
// weight that large is an outlier of the fit, not an infinity, and an
// infinite weight would turn every logit it touches into NaN. Infinities
// stay infinite and NaN stays NaN (quiet); values below half the smallest
// subnormal (2⁻²⁵) become a zero of their sign.
func toHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fffffff
	exp := int(abs >> 23)
	mant := abs & 0x7fffff
	switch {
	case exp == 0xff && mant != 0:
		return sign | 0x7e00
	case exp == 0xff:
		return sign | 0x7c00
	case abs > maxHalfBits:
		return sign | 0x7bff
	case exp >= 113: // 2⁻¹⁴ and above: a normal half, exponent exp-127+15
		h := uint32(exp-112)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
			h++ // a carry out of the mantissa moves to the next exponent, as it should
		}
		return sign | uint16(h)
	}
	// A subnormal half: m × 2⁻²⁴, m the 24-bit significand shifted right
	// by 126-exp (at least 14 here).
	shift := uint(126 - exp)
	if shift > 24 {
		return sign
	}
	full := 0x800000 | mant
	m := full >> shift
	rest, halfway := full&(1<<shift-1), uint32(1)<<(shift-1)
	if rest > halfway || rest == halfway && m&1 == 1 {
		m++ // 0x400 is the smallest normal half: still the right bits
	}
	return sign | uint16(m)
}

// fromHalf is the float32 of half float h: exact, every half float being
// a float32.
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // infinity, or NaN with its payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0: // zero or subnormal: mant × 2⁻²⁴
		f := float32(mant) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}
