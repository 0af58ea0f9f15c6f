package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
)

// parseCal reads -cal: "floor,ceil,semantic,bias,match,lead".
func parseCal(s string) (routing.Calibration, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 6 {
		return routing.Calibration{}, fmt.Errorf("-cal: want floor,ceil,semantic,bias,match,lead, got %q", s)
	}
	var v [6]float64
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return routing.Calibration{}, fmt.Errorf("-cal: %q: %w", p, err)
		}
		v[i] = f
	}
	return routing.Calibration{Floor: v[0], Ceil: v[1], Semantic: v[2], Bias: v[3], Match: v[4], Lead: v[5]}, nil
}

// applyCal makes c the calibration of the run: the wordllama model's, or
// with no embedder the lexical one.
func applyCal(c routing.Calibration, semantic bool) {
	if semantic {
		routing.Calibrations[wordllama.ModelID] = c
	} else {
		routing.LexicalCalibration = c
	}
}

// calLiteral is c as a Go literal.
func calLiteral(c routing.Calibration) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return fmt.Sprintf("routing.Calibration{Floor: %s, Ceil: %s, Semantic: %s, Bias: %s, Match: %s, Lead: %s}",
		f(c.Floor), f(c.Ceil), f(c.Semantic), f(c.Bias), f(c.Match), f(c.Lead))
}

// calFlag is c as -cal's value.
func calFlag(c routing.Calibration) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	return strings.Join([]string{f(c.Floor), f(c.Ceil), f(c.Semantic), f(c.Bias), f(c.Match), f(c.Lead)}, ",")
}
