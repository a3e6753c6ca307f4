package odb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// ErrCorrupt is the cause of every error about bytes that are not what
// git writes.
var ErrCorrupt = errors.New("odb: corrupt object data")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Type is an object type as packs number them.
type Type uint8

// Object types.
const (
	TypeCommit Type = 1
	TypeTree   Type = 2
	TypeBlob   Type = 3
	TypeTag    Type = 4
	typeOfs    Type = 6 // offset delta (packs only)
	typeRef    Type = 7 // reference delta (packs only)
)

func (t Type) String() string {
	switch t {
	case TypeCommit:
		return "commit"
	case TypeTree:
		return "tree"
	case TypeBlob:
		return "blob"
	case TypeTag:
		return "tag"
	}
	return "unknown"
}

func typeNamed(name string) (Type, bool) {
	switch name {
	case "commit":
		return TypeCommit, true
	case "tree":
		return TypeTree, true
	case "blob":
		return TypeBlob, true
	case "tag":
		return TypeTag, true
	}
	return 0, false
}

// parseLooseHeader parses the "<type> <size>\x00" that starts an inflated
// loose object and returns the header's length.
func parseLooseHeader(b []byte) (t Type, size int64, n int, err error) {
	nul := bytes.IndexByte(b, 0)
	if nul < 0 || nul > 32 {
		return 0, 0, 0, corrupt("loose object header without its NUL")
	}
	name, num, ok := bytes.Cut(b[:nul], []byte{' '})
	if !ok {
		return 0, 0, 0, corrupt("loose object header %q", b[:nul])
	}
	t, ok = typeNamed(string(name))
	if !ok {
		return 0, 0, 0, corrupt("loose object of type %q", name)
	}
	if len(num) == 0 || len(num) > 1 && num[0] == '0' {
		return 0, 0, 0, corrupt("loose object size %q", num)
	}
	size, err = strconv.ParseInt(string(num), 10, 64)
	if err != nil || size < 0 {
		return 0, 0, 0, corrupt("loose object size %q", num)
	}
	return t, size, nul + 1, nil
}

// packHeader parses the header of a pack entry: its type and the size of
// its (inflated) data, and the header's length.
func packHeader(b []byte) (t Type, size int64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, 0, corrupt("pack entry past the end")
	}
	c := b[0]
	t = Type(c >> 4 & 7)
	size = int64(c & 15)
	shift := uint(4)
	n = 1
	for c&0x80 != 0 {
		if n >= len(b) || shift > 56 {
			return 0, 0, 0, corrupt("pack entry size too long")
		}
		c = b[n]
		n++
		size |= int64(c&0x7f) << shift
		shift += 7
	}
	switch t {
	case TypeCommit, TypeTree, TypeBlob, TypeTag, typeOfs, typeRef:
	default:
		return 0, 0, 0, corrupt("pack entry of type %d", t)
	}
	if size < 0 {
		return 0, 0, 0, corrupt("pack entry size overflows")
	}
	return t, size, n, nil
}

// ofsDelta parses the negative offset of an offset delta's base.
func ofsDelta(b []byte) (ofs int64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, corrupt("offset delta past the end")
	}
	c := b[0]
	ofs = int64(c & 0x7f)
	n = 1
	for c&0x80 != 0 {
		if n >= len(b) || ofs >= 1<<55 {
			return 0, 0, corrupt("offset delta too long")
		}
		c = b[n]
		n++
		ofs = (ofs+1)<<7 | int64(c&0x7f)
	}
	return ofs, n, nil
}

// deltaSize reads one of the two sizes that start a delta.
func deltaSize(d []byte) (size int64, n int, err error) {
	shift := uint(0)
	for {
		if n >= len(d) || shift > 56 {
			return 0, 0, corrupt("delta size")
		}
		c := d[n]
		n++
		size |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			return size, n, nil
		}
	}
}

// applyDelta applies a git delta to base. maxSize bounds the result.
func applyDelta(base, delta []byte, maxSize int64) ([]byte, error) {
	srcSize, n, err := deltaSize(delta)
	if err != nil {
		return nil, err
	}
	delta = delta[n:]
	if srcSize != int64(len(base)) {
		return nil, corrupt("delta for a base of %d bytes applied to %d", srcSize, len(base))
	}
	dstSize, n, err := deltaSize(delta)
	if err != nil {
		return nil, err
	}
	delta = delta[n:]
	if dstSize > maxSize {
		return nil, fmt.Errorf("%w: object of %d bytes", ErrTooLarge, dstSize)
	}
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0: // copy from base
			var off, size uint64
			for i := range 4 {
				if op&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, corrupt("delta copy past the end")
					}
					off |= uint64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			for i := range 3 {
				if op&(0x10<<i) != 0 {
					if len(delta) == 0 {
						return nil, corrupt("delta copy past the end")
					}
					size |= uint64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			if size == 0 {
				size = 0x10000
			}
			if off+size > uint64(len(base)) || int64(len(out))+int64(size) > dstSize {
				return nil, corrupt("delta copy out of range")
			}
			out = append(out, base[off:off+size]...)
		case op != 0: // insert op bytes
			if int(op) > len(delta) || int64(len(out))+int64(op) > dstSize {
				return nil, corrupt("delta insert out of range")
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
		default:
			return nil, corrupt("delta opcode 0")
		}
	}
	if int64(len(out)) != dstSize {
		return nil, corrupt("delta made %d bytes, want %d", len(out), dstSize)
	}
	return out, nil
}

// idx is a parsed pack index: the sorted object names and their offsets.
type idx struct {
	hashSize int
	fanout   [256]uint32
	names    []byte // count * hashSize, sorted
	// v2: offsets are 4-byte big-endian, with the top bit selecting an
	// entry of large (8-byte) offsets; v1: stride and names interleaved.
	version int
	offsets []byte
	large   []byte
	v1      []byte // v1 entries: 4-byte offset + name
}

func (x *idx) count() int { return int(x.fanout[255]) }

// name returns the i-th object name.
func (x *idx) name(i int) []byte {
	if x.version == 1 {
		e := x.v1[i*(4+x.hashSize):]
		return e[4 : 4+x.hashSize]
	}
	return x.names[i*x.hashSize : (i+1)*x.hashSize]
}

// offset returns the pack offset of the i-th object.
func (x *idx) offset(i int) (int64, error) {
	if x.version == 1 {
		return int64(binary.BigEndian.Uint32(x.v1[i*(4+x.hashSize):])), nil
	}
	o := binary.BigEndian.Uint32(x.offsets[i*4:])
	if o&0x80000000 == 0 {
		return int64(o), nil
	}
	j := int(o & 0x7fffffff)
	if (j+1)*8 > len(x.large) {
		return 0, corrupt("pack index large offset %d out of range", j)
	}
	off := binary.BigEndian.Uint64(x.large[j*8:])
	if off > 1<<62 {
		return 0, corrupt("pack index offset %d", off)
	}
	return int64(off), nil
}

// find returns the position of id, or where it would be, and whether it
// is there (git's bsearch_pack).
func (x *idx) find(id []byte) (int, bool) {
	lo := 0
	if id[0] > 0 {
		lo = int(x.fanout[id[0]-1])
	}
	hi := int(x.fanout[id[0]])
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(x.name(mid), id); {
		case c == 0:
			return mid, true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return lo, false
}

const idxMagic = "\xfftOc"

// parseIdx parses a pack index (v1 or v2) of hashSize-byte names. It
// checks the layout and that the names are sorted and distinct, so find
// is a real binary search.
func parseIdx(b []byte, hashSize int) (*idx, error) {
	x := &idx{hashSize: hashSize, version: 1}
	fan := b
	if len(b) >= 8 && string(b[:4]) == idxMagic {
		if v := binary.BigEndian.Uint32(b[4:8]); v != 2 {
			return nil, corrupt("pack index version %d", v)
		}
		x.version = 2
		fan = b[8:]
	}
	if len(fan) < 256*4 {
		return nil, corrupt("pack index too short")
	}
	prev := uint32(0)
	for i := range 256 {
		f := binary.BigEndian.Uint32(fan[i*4:])
		if f < prev {
			return nil, corrupt("pack index fan-out not sorted")
		}
		x.fanout[i], prev = f, f
	}
	n := int(x.fanout[255])
	rest := fan[256*4:]
	trailer := 2 * hashSize
	if x.version == 1 {
		if n > (len(rest)-trailer)/(4+hashSize) || len(rest) < trailer {
			return nil, corrupt("pack index of %d objects truncated", n)
		}
		x.v1 = rest[:n*(4+hashSize)]
		if len(rest) != n*(4+hashSize)+trailer {
			return nil, corrupt("pack index size")
		}
	} else {
		need := n * (hashSize + 4 + 4)
		if n > len(rest)/(hashSize+8) || len(rest) < need+trailer {
			return nil, corrupt("pack index of %d objects truncated", n)
		}
		x.names = rest[:n*hashSize]
		x.offsets = rest[n*(hashSize+4) : n*(hashSize+8)]
		x.large = rest[need : len(rest)-trailer]
		if len(x.large)%8 != 0 {
			return nil, corrupt("pack index size")
		}
	}
	for i := 1; i < n; i++ {
		if bytes.Compare(x.name(i-1), x.name(i)) >= 0 {
			return nil, corrupt("pack index names not sorted")
		}
	}
	for i := range n {
		if first := x.name(i)[0]; uint32(i) >= x.fanout[first] || first > 0 && uint32(i) < x.fanout[first-1] {
			return nil, corrupt("pack index fan-out disagrees with its names")
		}
	}
	return x, nil
}
