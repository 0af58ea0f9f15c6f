package routing

import (
	"math"
	"sync/atomic"
)

// gramsOf appends the character 4-grams of words ws (each word between
// boundary marks, "<pto>": fastText's subwords) to f: each hashed
// (FNV-1a, a stored classifier's weights depend on it: never change it)
// into one of c.Grams buckets past the terms, each of the message's n
// grams weighing 1/√n (a repeated gram, or two sharing a bucket, count
// once per occurrence). Hashing keeps the features a fixed number and
// their lookup a few multiplications, with no strings or map. buf is
// scratch.
func (c *Classifier) gramsOf(f *features, ws []string, buf []byte) {
	start := len(f.idx)
	for _, w := range ws {
		f.idx, buf = c.appendGrams(f.idx, w, buf)
	}
	n := len(f.idx) - start
	v := 1 / float32(math.Sqrt(float64(n)))
	for range n {
		f.val = append(f.val, v)
	}
}

// appendGrams appends the features of word w's 4-grams to idx (gramsOf);
// buf is scratch.
func (c *Classifier) appendGrams(idx []int32, w string, buf []byte) ([]int32, []byte) {
	base, buckets := int32(len(c.Terms)), uint32(c.Grams)
	buf = append(append(append(buf[:0], '<'), w...), '>')
	for i := 0; i+gramLen <= len(buf); i++ {
		h := uint32(2166136261)
		for _, b := range buf[i : i+gramLen] {
			h = (h ^ uint32(b)) * 16777619
		}
		idx = append(idx, base+int32(h%buckets))
	}
	return idx, buf
}

// gramCount is how many 4-grams words ws have (appendGrams).
func gramCount(ws []string) int {
	n := 0
	for _, w := range ws {
		n += max(0, len(w)+2-gramLen+1)
	}
	return n
}

// wordGrams is a word and the sum of its 4-grams' rows of a classifier's
// weights (classes() floats).
type wordGrams struct {
	w   string
	row []float32
}

// wordSlots bounds the words whose grams' rows a classifier keeps
// (tokenLogits.words): a word's slot is its hash's, the first word in
// it keeps it, and a word whose slot another holds adds its grams' rows
// one by one, as before. At most wordSlotFloats floats (4 MB): 4,096
// words at 201 classes, 1,024 at 513; the words a team's users write
// most are among the first seen.
const wordSlotFloats = 1 << 20

func wordSlots(classes int) int {
	n := 256
	for n*2*classes <= wordSlotFloats && n < 1<<14 {
		n *= 2
	}
	return n
}

// addGrams adds to z the 4-grams' part of the logits of the message of
// words ws: (1/√n)·Σ_w G_w, G_w the sum of word w's grams' rows, kept per
// word. The same features as gramsOf's, their rows summed a word at a
// time (about 15 rows of a message instead of 55). tmp (classes()
// floats), buf and rows are scratch: the rows to add up are listed in
// their order, then summed a block of columns at a time (sumRows, the
// same bits as adding them to tmp one after another).
func (tl *tokenLogits) addGrams(c *Classifier, ws []string, z, tmp []float32, buf []byte, rows [][]float32) ([]byte, [][]float32) {
	n := gramCount(ws)
	if n == 0 {
		return buf, rows
	}
	nc := c.classes()
	rows = rows[:0]
	var idx []int32
	for _, w := range ws {
		if len(w)+2 < gramLen {
			continue
		}
		h := uint32(2166136261)
		for i := 0; i < len(w); i++ {
			h = (h ^ uint32(w[i])) * 16777619
		}
		slot := &tl.words[h&uint32(len(tl.words)-1)]
		if g := slot.Load(); g != nil && g.w == w {
			rows = append(rows, g.row)
			continue
		}
		idx, buf = c.appendGrams(idx[:0], w, buf)
		if slot.Load() != nil { // another word's: its rows one by one
			for _, i := range idx {
				r := int(c.Dim+int(i)) * nc
				rows = append(rows, c.Weights[r:r+nc])
			}
			continue
		}
		row := make([]float32, nc)
		for _, i := range idx {
			r := int(c.Dim+int(i)) * nc
			addTo(c.Weights[r:r+nc], row)
		}
		slot.CompareAndSwap(nil, &wordGrams{w: string([]byte(w)), row: row})
		rows = append(rows, row)
	}
	sumRows(rows, tmp)
	axpy(1/float32(math.Sqrt(float64(n))), tmp, z)
	clear(rows) // the classifier's rows: the scratch keeps none
	return buf, rows[:0]
}

// newWordSlots are a classifier's empty word slots.
func newWordSlots(classes int) []atomic.Pointer[wordGrams] {
	return make([]atomic.Pointer[wordGrams], wordSlots(classes))
}
