package readfile

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/pathsafe"
)

func newRepo(t testing.TB, files map[string]string) (*pathsafe.Root, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := pathsafe.NewRoot(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func codeOf(err error) errs.Code {
	if err == nil {
		return ""
	}
	return errs.From(err).Code
}

func TestReadWindow(t *testing.T) {
	five := "one\ntwo\nthree\nfour\nfive\n"
	files := map[string]string{
		"five.txt":     five,
		"noeol.txt":    "a\nb\nc",
		"crlf.txt":     "a\r\nb\r\nc\r\n",
		"empty.txt":    "",
		"one.txt":      "x",
		"blank.txt":    "\n\n\n",
		"utf8.txt":     "héllo\nwörld\n",
		"long.txt":     strings.Repeat("é", 10) + "\nnext\n",
		"longlast.txt": "short\n" + strings.Repeat("z", 20),
		"sub/a.go":     "package a\n",
	}
	root, _ := newRepo(t, files)
	tests := []struct {
		name string
		req  Request
		lim  Limits
		want Result // Path, SizeBytes and SHA256 are filled from the file
	}{
		{"whole file", Request{Path: "five.txt"}, Limits{},
			Result{Content: five, StartLine: 1, EndLine: 5, TotalLines: 5}},
		{"nested path", Request{Path: "./sub/a.go"}, Limits{},
			Result{Content: "package a\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
		{"offset", Request{Path: "five.txt", OffsetLine: 2, MaxLines: 2}, Limits{},
			Result{Content: "two\nthree\n", StartLine: 2, EndLine: 3, TotalLines: 5, Truncated: true, NextOffsetLine: 4}},
		{"offset to end", Request{Path: "five.txt", OffsetLine: 4}, Limits{},
			Result{Content: "four\nfive\n", StartLine: 4, EndLine: 5, TotalLines: 5}},
		{"max lines exactly the rest", Request{Path: "five.txt", OffsetLine: 4, MaxLines: 2}, Limits{},
			Result{Content: "four\nfive\n", StartLine: 4, EndLine: 5, TotalLines: 5}},
		{"last line", Request{Path: "five.txt", OffsetLine: 5}, Limits{},
			Result{Content: "five\n", StartLine: 5, EndLine: 5, TotalLines: 5}},
		{"offset past end", Request{Path: "five.txt", OffsetLine: 6}, Limits{},
			Result{Content: "", StartLine: 6, EndLine: 0, TotalLines: 5}},
		{"offset far past end", Request{Path: "five.txt", OffsetLine: 1000}, Limits{},
			Result{Content: "", StartLine: 1000, EndLine: 0, TotalLines: 5}},
		{"limit lines", Request{Path: "five.txt"}, Limits{MaxLines: 2},
			Result{Content: "one\ntwo\n", StartLine: 1, EndLine: 2, TotalLines: 5, Truncated: true, NextOffsetLine: 3}},
		{"request lines clamped to limit", Request{Path: "five.txt", MaxLines: 100}, Limits{MaxLines: 3},
			Result{Content: "one\ntwo\nthree\n", StartLine: 1, EndLine: 3, TotalLines: 5, Truncated: true, NextOffsetLine: 4}},
		{"limit bytes whole lines", Request{Path: "five.txt"}, Limits{MaxBytes: 10},
			Result{Content: "one\ntwo\n", StartLine: 1, EndLine: 2, TotalLines: 5, Truncated: true, NextOffsetLine: 3}},
		{"request bytes", Request{Path: "five.txt", OffsetLine: 3, MaxBytes: 11}, Limits{},
			Result{Content: "three\nfour\n", StartLine: 3, EndLine: 4, TotalLines: 5, Truncated: true, NextOffsetLine: 5}},
		{"request bytes clamped", Request{Path: "five.txt", MaxBytes: 1 << 30}, Limits{MaxBytes: 4},
			Result{Content: "one\n", StartLine: 1, EndLine: 1, TotalLines: 5, Truncated: true, NextOffsetLine: 2}},
		{"bytes exact fit", Request{Path: "five.txt", MaxBytes: len(five)}, Limits{},
			Result{Content: five, StartLine: 1, EndLine: 5, TotalLines: 5}},
		{"long first line cut on rune boundary", Request{Path: "long.txt", MaxBytes: 5}, Limits{},
			Result{Content: "éé", StartLine: 1, EndLine: 1, TotalLines: 2, Truncated: true, NextOffsetLine: 2}},
		{"long last line cut", Request{Path: "longlast.txt", OffsetLine: 2, MaxBytes: 8}, Limits{},
			Result{Content: "zzzzzzzz", StartLine: 2, EndLine: 2, TotalLines: 2, Truncated: true}},
		{"long line after short", Request{Path: "longlast.txt", MaxBytes: 8}, Limits{},
			Result{Content: "short\n", StartLine: 1, EndLine: 1, TotalLines: 2, Truncated: true, NextOffsetLine: 2}},
		{"no trailing newline", Request{Path: "noeol.txt"}, Limits{},
			Result{Content: "a\nb\nc", StartLine: 1, EndLine: 3, TotalLines: 3}},
		{"no trailing newline last only", Request{Path: "noeol.txt", OffsetLine: 3}, Limits{},
			Result{Content: "c", StartLine: 3, EndLine: 3, TotalLines: 3}},
		{"no trailing newline capped", Request{Path: "noeol.txt", MaxLines: 2}, Limits{},
			Result{Content: "a\nb\n", StartLine: 1, EndLine: 2, TotalLines: 3, Truncated: true, NextOffsetLine: 3}},
		{"crlf kept", Request{Path: "crlf.txt"}, Limits{},
			Result{Content: "a\r\nb\r\nc\r\n", StartLine: 1, EndLine: 3, TotalLines: 3}},
		{"crlf window", Request{Path: "crlf.txt", OffsetLine: 2, MaxLines: 1}, Limits{},
			Result{Content: "b\r\n", StartLine: 2, EndLine: 2, TotalLines: 3, Truncated: true, NextOffsetLine: 3}},
		{"empty file", Request{Path: "empty.txt"}, Limits{},
			Result{Content: "", StartLine: 1, EndLine: 0, TotalLines: 0}},
		{"single char", Request{Path: "one.txt"}, Limits{},
			Result{Content: "x", StartLine: 1, EndLine: 1, TotalLines: 1}},
		{"blank lines", Request{Path: "blank.txt", OffsetLine: 2}, Limits{},
			Result{Content: "\n\n", StartLine: 2, EndLine: 3, TotalLines: 3}},
		{"utf8", Request{Path: "utf8.txt"}, Limits{},
			Result{Content: "héllo\nwörld\n", StartLine: 1, EndLine: 2, TotalLines: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(root, tt.req, tt.lim)
			if err != nil {
				t.Fatalf("Read(%+v): got err %v, want nil", tt.req, err)
			}
			body := files[strings.TrimPrefix(tt.req.Path, "./")]
			want := tt.want
			want.Path = strings.TrimPrefix(tt.req.Path, "./")
			want.SizeBytes = int64(len(body))
			want.SHA256 = sum(body)
			if got != want {
				t.Errorf("Read(%+v):\n got %+v\nwant %+v", tt.req, got, want)
			}
		})
	}
}

func TestReadBinary(t *testing.T) {
	bigText := strings.Repeat("a", sniffLen-1) + "é" + "tail\n" // rune straddles the sniff boundary
	files := map[string]string{
		"nul.bin":      "abc\x00def\n",
		"latin1.txt":   "caf\xe9\n",
		"late-nul.txt": strings.Repeat("x\n", sniffLen) + "\x00",
		"straddle.txt": bigText,
		"late-bad.txt": strings.Repeat("y", sniffLen) + "\n\xff\n",
	}
	root, _ := newRepo(t, files)
	tests := []struct {
		name       string
		path       string
		wantBinary bool
		wantText   string // checked when not binary; "" = don't check
	}{
		{"nul", "nul.bin", true, ""},
		{"invalid utf8", "latin1.txt", true, ""},
		{"nul after sniff window", "late-nul.txt", false, ""},
		{"rune across sniff boundary", "straddle.txt", false, bigText},
		{"invalid utf8 after sniff window", "late-bad.txt", false, strings.Repeat("y", sniffLen) + "\n\uFFFD\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(root, Request{Path: tt.path}, Limits{})
			if err != nil {
				t.Fatalf("Read(%q): got err %v, want nil", tt.path, err)
			}
			if got.Binary != tt.wantBinary {
				t.Fatalf("Read(%q): got Binary %v, want %v", tt.path, got.Binary, tt.wantBinary)
			}
			if got.SHA256 != sum(files[tt.path]) || got.SizeBytes != int64(len(files[tt.path])) {
				t.Errorf("Read(%q): got size %d sha %s, want %d %s", tt.path, got.SizeBytes, got.SHA256, len(files[tt.path]), sum(files[tt.path]))
			}
			if got.Binary && (got.Content != "" || got.EndLine != 0) {
				t.Errorf("Read(%q): got content %q end %d for binary, want empty", tt.path, got.Content, got.EndLine)
			}
			if !utf8.ValidString(got.Content) {
				t.Errorf("Read(%q): got invalid UTF-8 content", tt.path)
			}
			if tt.wantText != "" && got.Content != tt.wantText {
				t.Errorf("Read(%q): got content %q, want %q", tt.path, got.Content, tt.wantText)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	root, dir := newRepo(t, map[string]string{
		"a.txt":           "a\n",
		"sub/b.txt":       "b\n",
		".env":            "SECRET=1\n",
		"keys/server.pem": "k\n",
		".git/config":     "[core]\n",
	})
	outside := filepath.Join(filepath.Dir(dir), "outside.txt")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside.txt", filepath.Join(dir, "escape_rel")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  Request
		want errs.Code
	}{
		{"directory", Request{Path: "sub"}, errs.IsDirectory},
		{"root", Request{Path: "."}, errs.IsDirectory},
		{"missing", Request{Path: "nope.txt"}, errs.NotFound},
		{"fifo", Request{Path: "fifo"}, errs.InvalidArgument},
		{"secret", Request{Path: ".env"}, errs.SecretPathDenied},
		{"secret pem", Request{Path: "keys/server.pem"}, errs.SecretPathDenied},
		{"git", Request{Path: ".git/config"}, errs.PathNotAllowed},
		{"symlink escape", Request{Path: "escape"}, errs.PathOutsideRoot},
		{"relative symlink escape", Request{Path: "escape_rel"}, errs.PathOutsideRoot},
		{"dotdot", Request{Path: "../outside.txt"}, errs.PathOutsideRoot},
		{"absolute outside", Request{Path: outside}, errs.PathOutsideRoot},
		{"empty path", Request{Path: ""}, errs.InvalidArgument},
		{"nul path", Request{Path: "a\x00"}, errs.InvalidArgument},
		{"negative offset", Request{Path: "a.txt", OffsetLine: -1}, errs.InvalidArgument},
		{"negative max lines", Request{Path: "a.txt", MaxLines: -1}, errs.InvalidArgument},
		{"negative max bytes", Request{Path: "a.txt", MaxBytes: -1}, errs.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(root, tt.req, Limits{})
			if got := codeOf(err); got != tt.want {
				t.Errorf("Read(%+v): got code %q (err %v), want %q", tt.req, got, err, tt.want)
			}
		})
	}
	if _, err := Read(nil, Request{Path: "a.txt"}, Limits{}); codeOf(err) != errs.InvalidArgument {
		t.Errorf("Read(nil root): got %v, want %s", err, errs.InvalidArgument)
	}
}

func TestReadLargeFileBoundedMemory(t *testing.T) {
	root, dir := newRepo(t, nil)
	const size = 10 << 20
	line := strings.Repeat("0123456789abcdef", 6) + "\n" // 97 bytes
	var b strings.Builder
	b.Grow(size + len(line))
	for b.Len() < size {
		b.WriteString(line)
	}
	body := b.String()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLines := strings.Count(body, "\n")
	b = strings.Builder{}

	tests := []struct {
		name string
		req  Request
		lim  Limits
	}{
		{"defaults", Request{Path: "big.txt"}, Limits{}},
		{"middle window", Request{Path: "big.txt", OffsetLine: wantLines / 2, MaxBytes: 64 << 10}, Limits{}},
		{"huge limits", Request{Path: "big.txt"}, Limits{MaxBytes: 1 << 20, MaxLines: 1 << 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxBytes := tt.lim.MaxBytes
			if maxBytes == 0 {
				maxBytes = DefaultMaxBytes
			}
			if tt.req.MaxBytes > 0 {
				maxBytes = min(maxBytes, tt.req.MaxBytes)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := Read(root, tt.req, tt.lim)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Content) > maxBytes {
				t.Errorf("got content of %d bytes, want <= %d", len(got.Content), maxBytes)
			}
			if !got.Truncated || got.NextOffsetLine != got.EndLine+1 {
				t.Errorf("got Truncated %v NextOffsetLine %d EndLine %d, want truncated and next = end+1", got.Truncated, got.NextOffsetLine, got.EndLine)
			}
			if got.TotalLines != wantLines || got.SizeBytes != int64(len(body)) || got.SHA256 != sum(body) {
				t.Errorf("got lines %d size %d sha %s, want %d %d %s", got.TotalLines, got.SizeBytes, got.SHA256, wantLines, len(body), sum(body))
			}
			// The window (<= maxBytes), its string copy and one 64 KiB chunk,
			// with slack: far below the 10 MiB file.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(3*maxBytes+(256<<10)) {
				t.Errorf("got %d bytes allocated reading a %d byte file, want <= %d", alloc, size, 3*maxBytes+(256<<10))
			}
		})
	}
}

func BenchmarkReadSmall(b *testing.B) {
	for _, n := range []int{1 << 10, 4 << 10} {
		body := strings.Repeat(strings.Repeat("x", 63)+"\n", n/64)
		root, _ := newRepo(b, map[string]string{"pkg/file.go": body})
		b.Run(strconv.Itoa(n>>10)+"KiB", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				if _, err := Read(root, Request{Path: "pkg/file.go"}, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadLarge(b *testing.B) {
	body := strings.Repeat(strings.Repeat("y", 99)+"\n", (4<<20)/100)
	root, _ := newRepo(b, map[string]string{"big.txt": body})
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Read(root, Request{Path: "big.txt"}, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadRaceSwapDirForSymlink swaps a directory for a symlink leading
// outside the root between resolution and open: the read must not return the
// outside file.
func TestReadRaceSwapDirForSymlink(t *testing.T) {
	root, dir := newRepo(t, map[string]string{"sub/x.txt": "inside\n"})
	outside := filepath.Join(filepath.Dir(dir), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "x.txt"), []byte("outside secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	swapped := false
	testHookBeforeOpen = func(string) {
		if swapped {
			return
		}
		swapped = true
		if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "sub.old")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeOpen = nil }()
	// The retry resolves the new layout and refuses it.
	got, err := Read(root, Request{Path: "sub/x.txt"}, Limits{})
	if codeOf(err) != errs.PathOutsideRoot {
		t.Fatalf("Read after swap: got (%q, %v), want code %s", got.Content, err, errs.PathOutsideRoot)
	}
}

// TestReadAtomicReplace replaces the file by rename between resolution and
// open, as editors do when saving: Read retries and returns the new content,
// or errs.Unavailable if the file keeps changing.
func TestReadAtomicReplace(t *testing.T) {
	tests := []struct {
		name     string
		replaces int
		want     errs.Code
	}{
		{"once", 1, ""},
		{"always", 1 << 30, errs.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir := newRepo(t, map[string]string{"x.txt": "old\n"})
			n := 0
			testHookBeforeOpen = func(abs string) {
				if n >= tt.replaces {
					return
				}
				n++
				tmp := filepath.Join(dir, "x.txt.tmp")
				if err := os.WriteFile(tmp, []byte("new\n"), 0o644); err != nil {
					t.Error(err)
				}
				if err := os.Rename(tmp, abs); err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookBeforeOpen = nil }()
			got, err := Read(root, Request{Path: "x.txt"}, Limits{})
			if codeOf(err) != tt.want {
				t.Fatalf("Read: got %v, want code %q", err, tt.want)
			}
			if err == nil && got.Content != "new\n" {
				t.Errorf("Read: got content %q, want %q", got.Content, "new\n")
			}
		})
	}
}

// TestReadLeafSwappedForSymlink replaces the file itself with a symlink
// between resolution and open: O_NOFOLLOW refuses it.
func TestReadLeafSwappedForSymlink(t *testing.T) {
	root, _ := newRepo(t, map[string]string{"x.txt": "inside\n"})
	testHookBeforeOpen = func(abs string) {
		if err := os.Remove(abs); err != nil {
			t.Error(err)
		}
		if err := os.Symlink("/etc/passwd", abs); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeOpen = nil }()
	_, err := Read(root, Request{Path: "x.txt"}, Limits{})
	if codeOf(err) != errs.PathNotAllowed {
		t.Fatalf("Read after leaf swap: got %v, want %s", err, errs.PathNotAllowed)
	}
}

// TestReadLeafSwappedForFifo replaces the file with a fifo between resolution
// and open: the open must not block and the read is refused.
func TestReadLeafSwappedForFifo(t *testing.T) {
	root, _ := newRepo(t, map[string]string{"x.txt": "inside\n"})
	testHookBeforeOpen = func(abs string) {
		if err := os.Remove(abs); err != nil {
			t.Error(err)
		}
		if err := syscall.Mkfifo(abs, 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeOpen = nil }()
	_, err := Read(root, Request{Path: "x.txt"}, Limits{})
	if codeOf(err) != errs.InvalidArgument {
		t.Fatalf("Read after fifo swap: got %v, want %s", err, errs.InvalidArgument)
	}
}

// A file larger than read_file hashes whole (a sparse one costs nothing to
// make) is refused at once with the size and a way out, not read for
// seconds.
func TestReadRefusesAFileTooLargeToHash(t *testing.T) {
	r, dir := newRepo(t, map[string]string{"small.txt": "x\n"})
	if err := os.WriteFile(filepath.Join(dir, "huge.bin"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "huge.bin"), MaxFileBytes+1); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	_, err := Read(r, Request{Path: "huge.bin"}, Limits{})
	if codeOf(err) != errs.InvalidArgument || !strings.Contains(err.Error(), "head -c") {
		t.Fatalf("Read of a %d-byte file: %v, want INVALID_ARGUMENT naming a way out", MaxFileBytes+1, err)
	}
	if _, err := Read(r, Request{Path: "small.txt"}, Limits{}); err != nil {
		t.Fatal(err)
	}
}
