package odb

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"
)

// FuzzApplyDelta: any delta against any base fails cleanly or makes
// exactly the size it declares; a delta built from copies and inserts
// makes what it describes.
func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("hello world"), []byte{11, 5, 0x91, 6, 5})
	f.Add([]byte("abc"), []byte{3, 4, 4, 'w', 'x', 'y', 'z'})
	f.Add([]byte(""), []byte{0, 0})
	f.Add([]byte("abcdef"), []byte{6, 3, 0x80})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		out, err := applyDelta(base, delta, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrTooLarge", err)
			}
			return
		}
		_, n, _ := deltaSize(delta)
		want, _, _ := deltaSize(delta[n:])
		if int64(len(out)) != want {
			t.Fatalf("made %d bytes, the delta says %d", len(out), want)
		}
	})
}

// TestApplyDeltaBuilds checks copies (every offset and size width, the
// 0x10000 default) and inserts.
func TestApplyDeltaBuilds(t *testing.T) {
	base := bytes.Repeat([]byte("0123456789abcdef"), 1<<13) // 128 KiB
	var want []byte
	var d []byte
	emitCopy := func(off, size int) {
		op := byte(0x80)
		var args []byte
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				op |= 1 << i
				args = append(args, b)
			}
		}
		sz := size
		if sz == 0x10000 {
			sz = 0
		}
		for i := range 3 {
			if b := byte(sz >> (8 * i)); b != 0 {
				op |= 0x10 << i
				args = append(args, b)
			}
		}
		d = append(append(d, op), args...)
		want = append(want, base[off:off+size]...)
	}
	emitCopy(0, 5)
	emitCopy(70000, 300)
	emitCopy(16, 0x10000)
	d = append(d, 3, 'x', 'y', 'z')
	want = append(want, "xyz"...)
	emitCopy(1, 1)
	var hdr []byte
	hdr = binary.AppendUvarint(hdr, uint64(len(base)))
	hdr = binary.AppendUvarint(hdr, uint64(len(want)))
	got, err := applyDelta(base, append(hdr, d...), 1<<30)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("applyDelta: %v (%d bytes, want %d)", err, len(got), len(want))
	}
	if _, err := applyDelta(base[1:], append(hdr, d...), 1<<30); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a delta applied to a base of another size: %v", err)
	}
	if _, err := applyDelta(base, append(hdr, d...), 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a result past the bound: %v", err)
	}
}

// FuzzInflateLoose: any stream either fails cleanly or yields an object
// whose header and size agree; a well-formed object round-trips.
func FuzzInflateLoose(f *testing.F) {
	f.Add("blob", []byte("hello\n"), false)
	f.Add("tree", []byte{}, false)
	f.Add("blob", []byte("x"), true)
	f.Fuzz(func(t *testing.T, typ string, payload []byte, raw bool) {
		var stream bytes.Buffer
		if raw {
			stream.Write(payload)
		} else {
			z := zlib.NewWriter(&stream)
			z.Write([]byte(typ + " "))
			z.Write([]byte(strconv.Itoa(len(payload))))
			z.Write([]byte{0})
			z.Write(payload)
			z.Close()
		}
		ty, data, err := inflateLoose(bytes.NewReader(stream.Bytes()), 1<<20)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrTooLarge", err)
			}
			if _, known := typeNamed(typ); known && !raw && len(payload) <= 1<<20 {
				t.Fatalf("a well-formed %s object failed: %v", typ, err)
			}
			return
		}
		if !raw && (ty.String() != typ || !bytes.Equal(data, payload)) {
			t.Fatalf("got %s %q, want %s %q", ty, data, typ, payload)
		}
	})
}

// FuzzParseIdx: any bytes either fail as ErrCorrupt or give an index
// whose lookups stay in range and find every name it lists.
func FuzzParseIdx(f *testing.F) {
	f.Add(makeIdx([][]byte{bytes.Repeat([]byte{1}, HashSize), bytes.Repeat([]byte{2}, HashSize)}, []uint64{12, 1 << 33}, 2))
	f.Add(makeIdx([][]byte{bytes.Repeat([]byte{7}, HashSize)}, []uint64{12}, 1))
	f.Add([]byte("\xfftOc\x00\x00\x00\x02"))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := parseIdx(b, HashSize)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		for i := range x.count() {
			name := x.name(i)
			if j, ok := x.find(name); !ok || j != i {
				t.Fatalf("find(name %d) = %d, %v", i, j, ok)
			}
			if _, err := x.offset(i); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("offset %d: %v", i, err)
			}
		}
		probe := bytes.Repeat([]byte{0x80}, HashSize)
		if j, _ := x.find(probe); j < 0 || j > x.count() {
			t.Fatalf("find out of range: %d", j)
		}
	})
}

// makeIdx builds a pack index of sorted names and offsets.
func makeIdx(names [][]byte, offs []uint64, version int) []byte {
	var fan [256]uint32
	for _, n := range names {
		for i := int(n[0]); i < 256; i++ {
			fan[i]++
		}
	}
	var b []byte
	if version == 2 {
		b = append(b, idxMagic...)
		b = binary.BigEndian.AppendUint32(b, 2)
	}
	for _, c := range fan {
		b = binary.BigEndian.AppendUint32(b, c)
	}
	if version == 1 {
		for i, n := range names {
			b = binary.BigEndian.AppendUint32(b, uint32(offs[i]))
			b = append(b, n...)
		}
	} else {
		for _, n := range names {
			b = append(b, n...)
		}
		for range names {
			b = binary.BigEndian.AppendUint32(b, 0)
		}
		var large []byte
		for _, o := range offs {
			if o < 1<<31 {
				b = binary.BigEndian.AppendUint32(b, uint32(o))
				continue
			}
			b = binary.BigEndian.AppendUint32(b, 0x80000000|uint32(len(large)/8))
			large = binary.BigEndian.AppendUint64(large, o)
		}
		b = append(b, large...)
	}
	return append(b, make([]byte, 2*HashSize)...)
}

// FuzzPackHeader: entry headers and offset encodings never read past
// their input.
func FuzzPackHeader(f *testing.F) {
	f.Add([]byte{0x3f})
	f.Add([]byte{0xb5, 0x80, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, size, n, err := packHeader(b); err == nil && (n > len(b) || size < 0) {
			t.Fatalf("packHeader read %d of %d bytes, size %d", n, len(b), size)
		}
		if ofs, n, err := ofsDelta(b); err == nil && (n > len(b) || ofs < 0) {
			t.Fatalf("ofsDelta read %d of %d bytes, offset %d", n, len(b), ofs)
		}
		if _, _, n, err := parseLooseHeader(b); err == nil && n > len(b) {
			t.Fatalf("parseLooseHeader read %d of %d bytes", n, len(b))
		}
	})
}
