package routing

// A query's logits, computed class by class. The fit's logits (logits,
// classifier.go) add each feature's row to every class at once, which
// suits the gradient; a query has one dense vector against every class,
// and as a dot product per class with eight partial sums the dense part
// takes about half the time of the row-by-row form (make bench-gate, 100
// agents: 200 classes × 256 dimensions). The sums are the same products
// in another order: a query's logits may differ from the fit's in the
// last bits of a float32, never in what the model learned.

// classMajor returns w's first dim rows (nc weights each) class by class.
func classMajor(w []float32, dim, nc int) []float32 {
	if dim <= 0 || nc <= 0 || len(w) < dim*nc {
		return nil
	}
	out := make([]float32, dim*nc)
	for i := range dim {
		row := w[i*nc : (i+1)*nc]
		for k, x := range row {
			out[k*dim+i] = x
		}
	}
	return out
}

// predict writes the class scores of a query's features f into z
// (classes()).
func (c *Classifier) predict(f features, z []float32) {
	nc := c.classes()
	if len(f.dense) != c.Dim || len(c.byClass) != c.Dim*nc {
		c.logits(f, z)
		return
	}
	copy(z, c.Bias)
	for k := range nc {
		z[k] += dotClass(f.dense, c.byClass[k*c.Dim:(k+1)*c.Dim])
	}
	for k, i := range f.idx {
		r := (c.Dim + int(i)) * nc
		axpy(f.val[k], c.Weights[r:r+nc], z)
	}
}

// dotClass is x · y (len(x) == len(y)), in eight partial sums.
func dotClass(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		x8, y8 := x[i:i+8:i+8], y[i:i+8:i+8]
		s0 += x8[0] * y8[0]
		s1 += x8[1] * y8[1]
		s2 += x8[2] * y8[2]
		s3 += x8[3] * y8[3]
		s4 += x8[4] * y8[4]
		s5 += x8[5] * y8[5]
		s6 += x8[6] * y8[6]
		s7 += x8[7] * y8[7]
	}
	for ; i < len(x); i++ {
		s0 += x[i] * y[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}
