package routing

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// roundMilli and thousandth must give exactly round3's values: the ranking
// compares them as integers and returns them as floats.
func TestRoundMilliIsRound3(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		m := roundMilli(x)
		if want := math.Round(x * 1000); float64(m) != want {
			t.Fatalf("roundMilli(%v) = %d, math.Round gives %v", x, m, want)
		}
		if thousandth[m] != round3(x) {
			t.Fatalf("thousandth[%d] = %v, round3(%v) = %v", m, thousandth[m], x, round3(x))
		}
		if milli(round3(x)) != m {
			t.Fatalf("milli(round3(%v)) = %d, want %d", x, milli(round3(x)), m)
		}
	}
	// Around every rounding boundary and every result, with the nearest
	// floats on both sides.
	for m := 0; m <= 1000; m++ {
		for _, h := range []float64{0, 0.5} {
			x := (float64(m) + h) / 1000
			for _, y := range []float64{x, x - 1e-15, x + 1e-15, x - 1e-12, x + 1e-12} {
				for _, z := range []float64{y, math.Nextafter(y, 0), math.Nextafter(y, 2)} {
					if z >= 0 && z <= 1+1e-12 {
						check(z)
					}
				}
			}
		}
	}
	check(0.49999999999999994 / 1000) // x·1000 just under ½
	check(1 + 2e-16)                  // a weighted sum a hair above 1
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		check(r.Float64())
	}
}

func TestAppendScoreFormatsAsStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for m := 0; m <= 1000; m++ {
		for _, x := range []float64{thousandth[m], float64(m) / 1000, round3(float64(m)/1000 + 1e-9), r.Float64(), -thousandth[m], 1 + thousandth[m]} {
			if got, want := string(appendScore(nil, x)), strconv.FormatFloat(x, 'f', 2, 64); got != want {
				t.Fatalf("appendScore(%v) = %q, strconv gives %q", x, got, want)
			}
		}
	}
}
