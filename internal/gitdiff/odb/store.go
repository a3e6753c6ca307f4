package odb

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrUnsupported is the cause of every error about a repository feature
// the Store does not model (the caller runs git instead).
var ErrUnsupported = errors.New("odb: not read in process")

// ErrNotFound: no loose or packed object has the name.
var ErrNotFound = errors.New("odb: object not found")

// ErrTooLarge: the object is larger than the caller's bound.
var ErrTooLarge = errors.New("odb: object too large")

// HashSize is the size of a SHA-1 object name, the only format read.
const HashSize = 20

// maxChain bounds a delta chain (git's deepest is 4095 by default caps).
const maxChain = 10000

// Store reads the objects of one objects directory. It is safe for
// concurrent use.
type Store struct {
	dir string // the objects directory

	mu    sync.RWMutex // protects packs and stamp; readers hold it while they read a pack
	packs []*pack
	stamp string // the pack directory as last listed: names, sizes, times
}

// pack is one .pack with its parsed .idx.
type pack struct {
	name   string // base name without extension
	idx    *idx
	unmap  func() // releases the index's memory
	file   *os.File
	size   int64
	stamp  string
	closed bool
}

// Open returns the Store of the objects directory dir (.git/objects). It
// fails with ErrUnsupported for what it does not model: alternates and a
// multi-pack index.
func Open(dir string) (*Store, error) {
	for _, f := range []string{"info/alternates", "pack/multi-pack-index", "info/http-alternates"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("%w: %s", ErrUnsupported, f)
		}
	}
	s := &Store{dir: dir}
	if err := s.Refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

// Close releases the packs.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.packs {
		p.close()
	}
	s.packs, s.stamp = nil, ""
}

func (p *pack) close() {
	if p.closed {
		return
	}
	p.closed = true
	p.unmap()
	p.file.Close()
}

// Refresh lists the pack directory again when it changed (a repack, a
// fetch, a gc): packs that are gone are closed, new ones opened. A
// multi-pack index appearing makes it fail with ErrUnsupported.
func (s *Store) Refresh() error {
	packDir := filepath.Join(s.dir, "pack")
	ents, err := os.ReadDir(packDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	type found struct{ name, stamp string }
	var list []found
	var stamp strings.Builder
	for _, e := range ents {
		n := e.Name()
		if n == "multi-pack-index" {
			return fmt.Errorf("%w: multi-pack-index", ErrUnsupported)
		}
		base, ok := strings.CutSuffix(n, ".idx")
		if !ok {
			continue
		}
		ii, err := os.Stat(filepath.Join(packDir, n))
		if err != nil {
			continue
		}
		pi, err := os.Stat(filepath.Join(packDir, base+".pack"))
		if err != nil || !pi.Mode().IsRegular() {
			continue // git lists a pack only with its .pack
		}
		st := base + "/" + strconv.FormatInt(ii.Size(), 10) + "/" + ii.ModTime().Format(time.RFC3339Nano) + "/" + strconv.FormatInt(pi.Size(), 10)
		list = append(list, found{base, st})
		stamp.WriteString(st + "\n")
	}
	for _, alt := range []string{"info/alternates", "info/http-alternates"} {
		if _, err := os.Lstat(filepath.Join(s.dir, alt)); err == nil {
			return fmt.Errorf("%w: %s", ErrUnsupported, alt)
		}
	}
	s.mu.RLock()
	same := s.stamp == stamp.String() && s.packs != nil
	s.mu.RUnlock()
	if same {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := map[string]*pack{}
	for _, p := range s.packs {
		old[p.stamp] = p
	}
	var packs []*pack
	var firstErr error
	for _, f := range list {
		if p := old[f.stamp]; p != nil {
			delete(old, f.stamp)
			packs = append(packs, p)
			continue
		}
		p, err := openPack(packDir, f.name)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		p.stamp = f.stamp
		packs = append(packs, p)
	}
	for _, p := range old {
		p.close()
	}
	if firstErr != nil {
		// A pack git would read and we cannot: say so rather than
		// answer from the others.
		for _, p := range packs {
			p.close()
		}
		s.packs, s.stamp = nil, ""
		return firstErr
	}
	if packs == nil {
		packs = []*pack{}
	}
	s.packs, s.stamp = packs, stamp.String()
	return nil
}

func openPack(dir, base string) (*pack, error) {
	data, unmap, err := mapFile(filepath.Join(dir, base+".idx"))
	if err != nil {
		return nil, err
	}
	x, err := parseIdx(data, HashSize)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("%s.idx: %w", base, err)
	}
	f, err := os.Open(filepath.Join(dir, base+".pack"))
	if err != nil {
		unmap()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		unmap()
		f.Close()
		return nil, err
	}
	var hdr [12]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || string(hdr[:4]) != "PACK" || hdr[7] != 2 && hdr[7] != 3 || hdr[4] != 0 || hdr[5] != 0 || hdr[6] != 0 {
		unmap()
		f.Close()
		return nil, corrupt("%s.pack: not a pack of version 2 or 3", base)
	}
	return &pack{name: base, idx: x, unmap: unmap, file: f, size: fi.Size()}, nil
}

// ObjectCount is what git's repo_approximate_object_count counts: the
// objects of the packs (loose objects are not counted).
func (s *Store) ObjectCount() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var n int64
	for _, p := range s.packs {
		n += int64(p.idx.count())
	}
	return n
}

// Blob returns the content of the blob id (a 20-byte name), checked
// against its name. Objects larger than maxSize fail with ErrTooLarge.
func (s *Store) Blob(id []byte, maxSize int64) ([]byte, error) {
	t, data, err := s.Read(id, maxSize)
	if err != nil {
		return nil, err
	}
	if t != TypeBlob {
		return nil, corrupt("%x is a %s, not a blob", id, t)
	}
	return data, nil
}

// Read returns the type and content of the object id, checked against
// its name.
func (s *Store) Read(id []byte, maxSize int64) (Type, []byte, error) {
	if len(id) != HashSize {
		return 0, nil, fmt.Errorf("%w: object name of %d bytes", ErrUnsupported, len(id))
	}
	t, data, err := s.read(id, maxSize, 0)
	if errors.Is(err, ErrNotFound) {
		// A repack may have replaced the packs since they were listed.
		if rerr := s.Refresh(); rerr != nil {
			return 0, nil, rerr
		}
		t, data, err = s.read(id, maxSize, 0)
	}
	if err != nil {
		return 0, nil, err
	}
	if !bytes.Equal(hashObject(t, data), id) {
		return 0, nil, corrupt("object %x does not hash to its name", id)
	}
	return t, data, nil
}

// HashBlob returns the object name of a blob of content data.
func HashBlob(data []byte) []byte { return hashObject(TypeBlob, data) }

func hashObject(t Type, data []byte) []byte {
	h := sha1.New()
	h.Write([]byte(t.String() + " " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return h.Sum(nil)
}

func (s *Store) read(id []byte, maxSize int64, depth int) (Type, []byte, error) {
	if depth > maxChain {
		return 0, nil, corrupt("delta chain deeper than %d", maxChain)
	}
	s.mu.RLock()
	for _, p := range s.packs {
		if i, ok := p.idx.find(id); ok {
			off, err := p.idx.offset(i)
			if err == nil {
				var t Type
				var data []byte
				t, data, err = s.readPacked(p, off, maxSize, depth)
				s.mu.RUnlock()
				return t, data, err
			}
			s.mu.RUnlock()
			return 0, nil, err
		}
	}
	s.mu.RUnlock()
	return s.readLoose(id, maxSize)
}

// readLoose reads objects/xx/yyyy.
func (s *Store) readLoose(id []byte, maxSize int64) (Type, []byte, error) {
	h := hex.EncodeToString(id)
	f, err := os.Open(filepath.Join(s.dir, h[:2], h[2:]))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, fmt.Errorf("%w: %s", ErrNotFound, h)
	}
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	return inflateLoose(bufio.NewReaderSize(f, 32<<10), maxSize)
}

// inflateLoose inflates a loose object's zlib stream.
func inflateLoose(r io.Reader, maxSize int64) (Type, []byte, error) {
	z, err := zlib.NewReader(r)
	if err != nil {
		return 0, nil, corrupt("loose object: %v", err)
	}
	defer z.Close()
	var head [64]byte
	n, err := io.ReadAtLeast(z, head[:], 1)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, nil, corrupt("loose object: %v", err)
	}
	for n < len(head) && bytes.IndexByte(head[:n], 0) < 0 {
		m, err := z.Read(head[n:])
		n += m
		if err != nil {
			break
		}
	}
	t, size, hl, err := parseLooseHeader(head[:n])
	if err != nil {
		return 0, nil, err
	}
	if size > maxSize {
		return 0, nil, fmt.Errorf("%w: object of %d bytes", ErrTooLarge, size)
	}
	data := make([]byte, size)
	got := copy(data, head[hl:n])
	if int64(n-hl) > size {
		return 0, nil, corrupt("loose object longer than its header says")
	}
	if _, err := io.ReadFull(z, data[got:]); err != nil {
		return 0, nil, corrupt("loose object shorter than its header says: %v", err)
	}
	if err := expectEnd(z); err != nil {
		return 0, nil, err
	}
	return t, data, nil
}

// expectEnd checks that a zlib stream ends here (and so that its checksum
// holds).
func expectEnd(z io.Reader) error {
	var one [1]byte
	m, err := z.Read(one[:])
	if m != 0 {
		return corrupt("zlib stream longer than its object")
	}
	if err != io.EOF {
		if err == nil {
			// A read of 0 bytes and no error: ask once more.
			if m, err = z.Read(one[:]); m == 0 && err == io.EOF {
				return nil
			}
		}
		return corrupt("zlib stream: %v", err)
	}
	return nil
}

// readPacked reads the object at off in p, resolving its delta chain.
// The caller holds s.mu for reading.
func (s *Store) readPacked(p *pack, off int64, maxSize int64, depth int) (Type, []byte, error) {
	var deltas [][]byte
	for {
		if len(deltas)+depth > maxChain {
			return 0, nil, corrupt("delta chain deeper than %d", maxChain)
		}
		if off < 12 || off >= p.size {
			return 0, nil, corrupt("%s.pack: offset %d out of range", p.name, off)
		}
		var hb [32]byte
		n, err := p.file.ReadAt(hb[:], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, err
		}
		t, size, hl, err := packHeader(hb[:n])
		if err != nil {
			return 0, nil, err
		}
		// A delta is never larger than the object it makes plus its
		// copy instructions: bound its inflation too.
		limit := maxSize
		if t == typeOfs || t == typeRef {
			limit = maxSize + maxSize/2 + 64
		}
		if size > limit {
			return 0, nil, fmt.Errorf("%w: object of %d bytes", ErrTooLarge, size)
		}
		switch t {
		case TypeCommit, TypeTree, TypeBlob, TypeTag:
			data, err := p.inflate(off+int64(hl), size)
			if err != nil {
				return 0, nil, err
			}
			return resolve(t, data, deltas, maxSize)
		case typeOfs:
			ofs, m, err := ofsDelta(hb[hl:n])
			if err != nil {
				return 0, nil, err
			}
			if ofs <= 0 || ofs >= off {
				return 0, nil, corrupt("%s.pack: delta base offset out of range", p.name)
			}
			d, err := p.inflate(off+int64(hl+m), size)
			if err != nil {
				return 0, nil, err
			}
			deltas = append(deltas, d)
			off -= ofs
		case typeRef:
			if n < hl+HashSize {
				return 0, nil, corrupt("%s.pack: reference delta past the end", p.name)
			}
			base := slices.Clone(hb[hl : hl+HashSize])
			d, err := p.inflate(off+int64(hl+HashSize), size)
			if err != nil {
				return 0, nil, err
			}
			deltas = append(deltas, d)
			if i, ok := p.idx.find(base); ok {
				if off, err = p.idx.offset(i); err != nil {
					return 0, nil, err
				}
				continue
			}
			// The base is in another pack or loose (a thin pack
			// completed by index-pack keeps its bases local, but be
			// exact anyway).
			bt, bdata, err := s.readOutside(p, base, maxSize+maxSize/2+64, depth+len(deltas))
			if err != nil {
				return 0, nil, err
			}
			return resolve(bt, bdata, deltas, maxSize)
		}
	}
}

// readOutside reads id from the packs other than p or from loose objects;
// the caller holds s.mu for reading.
func (s *Store) readOutside(p *pack, id []byte, maxSize int64, depth int) (Type, []byte, error) {
	for _, q := range s.packs {
		if q == p {
			continue
		}
		if i, ok := q.idx.find(id); ok {
			off, err := q.idx.offset(i)
			if err != nil {
				return 0, nil, err
			}
			return s.readPacked(q, off, maxSize, depth)
		}
	}
	return s.readLoose(id, maxSize)
}

// resolve applies deltas (the last one found first) to base.
func resolve(t Type, data []byte, deltas [][]byte, maxSize int64) (Type, []byte, error) {
	for i := len(deltas) - 1; i >= 0; i-- {
		var err error
		if data, err = applyDelta(data, deltas[i], maxSize+maxSize/2+64); err != nil {
			return 0, nil, err
		}
	}
	if int64(len(data)) > maxSize {
		return 0, nil, fmt.Errorf("%w: object of %d bytes", ErrTooLarge, len(data))
	}
	return t, data, nil
}

var zlibPool sync.Pool

// inflate inflates the zlib stream at off into exactly size bytes.
func (p *pack) inflate(off, size int64) ([]byte, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(p.file, off, p.size-off), int(min(max(size/2, 512), 64<<10)))
	var z io.ReadCloser
	if zr, ok := zlibPool.Get().(io.ReadCloser); ok {
		if err := zr.(zlib.Resetter).Reset(r, nil); err != nil {
			return nil, corrupt("%s.pack: %v", p.name, err)
		}
		z = zr
	} else {
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, corrupt("%s.pack: %v", p.name, err)
		}
		z = zr
	}
	defer zlibPool.Put(z)
	data := make([]byte, size)
	if _, err := io.ReadFull(z, data); err != nil {
		return nil, corrupt("%s.pack at %d: %v", p.name, off, err)
	}
	if err := expectEnd(z); err != nil {
		return nil, err
	}
	return data, nil
}

// FallbackAbbrev is git's FALLBACK_DEFAULT_ABBREV.
const FallbackAbbrev = 7

// AutoAbbrev is the length git's core.abbrev=auto (the default) starts
// from: enough hex digits for the packed object count, at least 7.
func (s *Store) AutoAbbrev() int {
	count := s.ObjectCount()
	msb := 0
	for c := count >> 1; c > 0; c >>= 1 {
		msb++
	}
	n := (msb + 1 + 1) / 2
	return max(n, FallbackAbbrev)
}

// Abbrev returns the shortest prefix of id's hex name, at least minLen
// digits long (minLen < 0: AutoAbbrev), that no other object of the
// store shares: git's find_unique_abbrev. id need not exist (the name of
// a work tree file's content usually does not).
func (s *Store) Abbrev(id []byte, minLen int) (string, error) {
	if len(id) != HashSize {
		return "", fmt.Errorf("%w: object name of %d bytes", ErrUnsupported, len(id))
	}
	h := hex.EncodeToString(id)
	if minLen < 0 {
		minLen = s.AutoAbbrev()
	}
	if minLen == 0 || minLen >= len(h) {
		return h, nil
	}
	cur := minLen
	extend := func(other []byte, from int) {
		i := from
		for i < len(h) && h[i] == hexDigit(other, i) {
			i++
		}
		// git: i < GIT_MAX_RAWSZ (32), an odd bound it keeps.
		if i < 32 && i >= cur {
			cur = i + 1
		}
	}
	s.mu.RLock()
	for _, p := range s.packs {
		n := p.idx.count()
		if n == 0 {
			continue
		}
		first, match := p.idx.find(id)
		if !match {
			if first < n {
				extend(p.idx.name(first), 0)
			}
		} else if first < n-1 {
			extend(p.idx.name(first+1), 0)
		}
		if first > 0 {
			extend(p.idx.name(first-1), 0)
		}
	}
	s.mu.RUnlock()
	// Loose objects sharing the first cur digits (git's oidtree walk of
	// the loose cache, with init_len = cur).
	from := cur
	ents, err := os.ReadDir(filepath.Join(s.dir, h[:2]))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for _, e := range ents {
		name := e.Name()
		if len(name) != 2*HashSize-2 || !isHex(name) || !strings.HasPrefix(h[2:], strings.ToLower(name)[:from-2]) {
			continue
		}
		other, _ := hex.DecodeString(h[:2] + strings.ToLower(name))
		extend(other, from)
	}
	return h[:cur], nil
}

func hexDigit(id []byte, i int) byte {
	const digits = "0123456789abcdef"
	b := id[i/2]
	if i%2 == 0 {
		return digits[b>>4]
	}
	return digits[b&15]
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
