package wordllama

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// maxHeader bounds the JSON header of a safetensors file: the format's own
// limit is 100 MB; a length beyond the file or this bound means a corrupt
// file, not a reason to allocate gigabytes.
const maxHeader = 100 << 20

// tensorInfo is one entry of a safetensors header.
type tensorInfo struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// readTable reads the 2-D F16 tensor name from the safetensors file at path:
// 8 bytes of little-endian header length, that many bytes of JSON header, then
// the raw data, offsets counted from the end of the header. The values stay
// half precision ([]uint16, row-major); Load widens it to float32 once.
func readTable(path, name string) (table []uint16, rows, cols int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	size := st.Size()
	var prefix [8]byte
	if _, err := io.ReadFull(f, prefix[:]); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: truncated safetensors header: %w", path, err)
	}
	n := binary.LittleEndian.Uint64(prefix[:])
	if n > maxHeader || int64(n) > size-8 {
		return nil, 0, 0, fmt.Errorf("%s: safetensors header of %d bytes in a file of %d bytes: truncated or not a safetensors file", path, n, size)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(f, header); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: reading the safetensors header: %w", path, err)
	}
	// Besides the tensors the header may hold "__metadata__" (strings), so
	// entries are decoded one at a time, the wanted one only.
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(header, &entries); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: safetensors header is not JSON: %w", path, err)
	}
	raw, ok := entries[name]
	if !ok {
		return nil, 0, 0, fmt.Errorf("%s: no tensor %q in the safetensors header", path, name)
	}
	var t tensorInfo
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: tensor %q: %w", path, name, err)
	}
	if t.DType != "F16" {
		return nil, 0, 0, fmt.Errorf("%s: tensor %q has dtype %q; only F16 is supported", path, name, t.DType)
	}
	if len(t.Shape) != 2 || t.Shape[0] <= 0 || t.Shape[1] <= 0 || t.Shape[0] > math.MaxInt32 || t.Shape[1] > math.MaxInt32 {
		return nil, 0, 0, fmt.Errorf("%s: tensor %q has shape %v; want rows × columns", path, name, t.Shape)
	}
	if len(t.DataOffsets) != 2 {
		return nil, 0, 0, fmt.Errorf("%s: tensor %q has data_offsets %v", path, name, t.DataOffsets)
	}
	begin, end := t.DataOffsets[0], t.DataOffsets[1]
	want := t.Shape[0] * t.Shape[1] * 2
	if begin < 0 || end-begin != want {
		return nil, 0, 0, fmt.Errorf("%s: tensor %q spans bytes %d–%d, but %v F16 values take %d", path, name, begin, end, t.Shape, want)
	}
	start := 8 + int64(n) + begin
	if start+want > size {
		return nil, 0, 0, fmt.Errorf("%s: tensor %q ends at byte %d of a file of %d bytes: truncated", path, name, start+want, size)
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, 0, 0, err
	}
	table = make([]uint16, want/2)
	// Read in chunks rather than the whole file at once: the load then
	// needs the table and 64 KB, not twice the table.
	buf := make([]byte, 64<<10)
	for i := 0; i < len(table); {
		chunk := buf[:min(len(buf), 2*(len(table)-i))]
		if _, err := io.ReadFull(f, chunk); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				err = fmt.Errorf("truncated: %w", err)
			}
			return nil, 0, 0, fmt.Errorf("%s: reading tensor %q: %w", path, name, err)
		}
		for j := 0; j < len(chunk); j += 2 {
			table[i] = binary.LittleEndian.Uint16(chunk[j:])
			i++
		}
	}
	return table, int(t.Shape[0]), int(t.Shape[1]), nil
}

// halfToFloat32 converts an IEEE 754 half-precision value to float32
// exactly, as numpy's astype(np.float32) does in the Python package.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN: keep the payload
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	default: // subnormal half, a normal float32: frac × 2^-24
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
}
