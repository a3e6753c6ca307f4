package gitx

import (
	"reflect"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
)

// diffRepo has one commit and then: an unstaged edit to a.txt, a staged edit
// to b.txt, and a committed second revision.
func diffRepo(t *testing.T) string {
	t.Helper()
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "a1\n")
	writeFile(t, dir, "b.txt", "b1\n")
	writeFile(t, dir, "sub/c.txt", "c1\n")
	commitAll(t, dir, "one")
	gitT(t, dir, "tag", "v1")
	writeFile(t, dir, "sub/c.txt", "c2\n")
	commitAll(t, dir, "two")
	writeFile(t, dir, "b.txt", "b2\n")
	gitT(t, dir, "add", "b.txt")
	writeFile(t, dir, "a.txt", "a2\n")
	return dir
}

func paths(fs []FileStat) []string {
	var p []string
	for _, f := range fs {
		p = append(p, f.Path)
	}
	return p
}

func TestDiffModes(t *testing.T) {
	ctx := testCtx(t)
	dir := diffRepo(t)
	var g Git
	tests := []struct {
		name      string
		o         DiffOptions
		wantFiles []string
		contains  []string
		absent    []string
	}{
		{"unstaged", DiffOptions{}, []string{"a.txt"}, []string{"diff --git a/a.txt b/a.txt", "-a1", "+a2"}, []string{"b2"}},
		{"staged", DiffOptions{Staged: true}, []string{"b.txt"}, []string{"+b2"}, []string{"a2"}},
		{"against rev", DiffOptions{Rev: "v1"}, []string{"a.txt", "b.txt", "sub/c.txt"}, []string{"+a2", "+b2", "+c2"}, nil},
		{"staged against rev", DiffOptions{Staged: true, Rev: "v1"}, []string{"b.txt", "sub/c.txt"}, []string{"+b2", "+c2"}, []string{"a2"}},
		{"range", DiffOptions{Rev: "v1..HEAD"}, []string{"sub/c.txt"}, []string{"+c2"}, []string{"a2", "b2"}},
		{"path filter", DiffOptions{Rev: "v1", Paths: []string{"sub"}}, []string{"sub/c.txt"}, []string{"+c2"}, []string{"a2"}},
		{"glob filter", DiffOptions{Rev: "v1", Paths: []string{"*.txt"}}, []string{"a.txt", "b.txt", "sub/c.txt"}, nil, nil},
		{"context", DiffOptions{Context: 7}, []string{"a.txt"}, []string{"@@ -1 +1 @@"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := g.Diff(ctx, dir, tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(d.Files); !reflect.DeepEqual(got, tt.wantFiles) {
				t.Errorf("files = %q, want %q", got, tt.wantFiles)
			}
			for _, s := range tt.contains {
				if !strings.Contains(d.Patch, s) {
					t.Errorf("patch lacks %q:\n%s", s, d.Patch)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(d.Patch, s) {
					t.Errorf("patch has %q:\n%s", s, d.Patch)
				}
			}
			if d.Truncated || d.Bytes != len(d.Patch) {
				t.Errorf("truncated/bytes = %v/%d, want false/%d", d.Truncated, d.Bytes, len(d.Patch))
			}
		})
	}
}

func TestDiffNumstatBinaryAndRename(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "img.bin", "\x00\x01\x02")
	writeFile(t, dir, "old name.txt", strings.Repeat("line\n", 30))
	writeFile(t, dir, "x.txt", "1\n2\n3\n")
	commitAll(t, dir, "one")
	writeFile(t, dir, "img.bin", "\x00\x03\x04\x05")
	gitT(t, dir, "mv", "old name.txt", "new\tname ü.txt")
	writeFile(t, dir, "x.txt", "1\nzwei\n3\nvier\n")
	gitT(t, dir, "add", "-A")
	var g Git
	d, err := g.Diff(ctx, dir, DiffOptions{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []FileStat{
		{Path: "img.bin", Binary: true},
		{Path: "new\tname ü.txt", OrigPath: "old name.txt"},
		{Path: "x.txt", Added: 2, Deleted: 1},
	}
	if !reflect.DeepEqual(d.Files, want) {
		t.Errorf("files:\ngot  %+v\nwant %+v", d.Files, want)
	}
	if !strings.Contains(d.Patch, "Binary files") {
		t.Errorf("patch lacks the binary notice:\n%s", d.Patch)
	}
}

func TestDiffTruncation(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "big.txt", "")
	commitAll(t, dir, "one")
	var sb strings.Builder
	for i := 0; i < 40000; i++ {
		sb.WriteString("a fairly long line of text to make the diff large enough\n")
	}
	writeFile(t, dir, "big.txt", sb.String())
	var g Git
	full, err := g.Diff(ctx, dir, DiffOptions{MaxBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if full.Truncated || full.Bytes != len(full.Patch) {
		t.Fatalf("full: truncated/bytes = %v/%d, want false/%d", full.Truncated, full.Bytes, len(full.Patch))
	}
	d, err := g.Diff(ctx, dir, DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated {
		t.Fatal("truncated = false, want true")
	}
	if len(d.Patch) > DefaultDiffBytes || len(d.Patch) < DefaultDiffBytes-200 {
		t.Errorf("len(patch) = %d, want just under %d", len(d.Patch), DefaultDiffBytes)
	}
	if !strings.HasSuffix(d.Patch, "\n") {
		t.Error("patch does not end at a line boundary")
	}
	if d.Bytes != full.Bytes {
		t.Errorf("bytes = %d, want the full size %d", d.Bytes, full.Bytes)
	}
	if !strings.HasPrefix(full.Patch, d.Patch) {
		t.Error("truncated patch is not a prefix of the full patch")
	}
	want := []FileStat{{Path: "big.txt", Added: 40000}}
	if !reflect.DeepEqual(d.Files, want) {
		t.Errorf("files = %+v, want %+v", d.Files, want)
	}
}

func TestDiffErrors(t *testing.T) {
	ctx := testCtx(t)
	dir := diffRepo(t)
	var g Git
	tests := []struct {
		name    string
		o       DiffOptions
		want    errs.Code
		message string
	}{
		{"option as rev", DiffOptions{Rev: "--output=/tmp/x"}, errs.InvalidArgument, "must not start with '-'"},
		{"rev with path", DiffOptions{Rev: "HEAD:a.txt"}, errs.InvalidArgument, "':'"},
		{"rev with space", DiffOptions{Rev: "HEAD a"}, errs.InvalidArgument, "whitespace"},
		{"unknown rev", DiffOptions{Rev: "no-such-branch"}, errs.NotFound, `revision "no-such-branch" not found`},
		{"unknown oid", DiffOptions{Rev: strings.Repeat("ab", 20)}, errs.NotFound, "not found"},
		{"path option", DiffOptions{Paths: []string{"--output=x"}}, errs.InvalidArgument, "must not start with '-'"},
		{"pathspec magic", DiffOptions{Paths: []string{":(top)x"}}, errs.InvalidArgument, "magic"},
		{"escaping path", DiffOptions{Paths: []string{"../x"}}, errs.PathOutsideRoot, "escapes"},
		{"negative context", DiffOptions{Context: -1}, errs.InvalidArgument, "negative"},
		{"negative max bytes", DiffOptions{MaxBytes: -1}, errs.InvalidArgument, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := g.Diff(ctx, dir, tt.o)
			if c := errs.CodeOf(err); c != tt.want {
				t.Fatalf("code = %s (%v), want %s", c, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("message %q lacks %q", err.Error(), tt.message)
			}
		})
	}
}

func TestDiffUnbornStaged(t *testing.T) {
	ctx := testCtx(t)
	dir := newRepo(t)
	writeFile(t, dir, "a.txt", "new\n")
	gitT(t, dir, "add", "a.txt")
	var g Git
	d, err := g.Diff(ctx, dir, DiffOptions{Staged: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []FileStat{{Path: "a.txt", Added: 1}}; !reflect.DeepEqual(d.Files, want) {
		t.Errorf("files = %+v, want %+v", d.Files, want)
	}
}

func TestParseNumstat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		partial bool
		want    []FileStat
		wantErr bool
	}{
		{"empty", "", false, []FileStat{}, false},
		{"plain", "1\t2\ta b\x00", false, []FileStat{{Path: "a b", Added: 1, Deleted: 2}}, false},
		{"binary", "-\t-\timg\x00", false, []FileStat{{Path: "img", Binary: true}}, false},
		{"rename", "0\t0\t\x00old\x00new\x00", false, []FileStat{{Path: "new", OrigPath: "old"}}, false},
		{"no trailing NUL", "3\t0\tx", false, []FileStat{{Path: "x", Added: 3}}, false},
		{"partial drops tail", "3\t0\tx\x004\t1\ty", true, []FileStat{{Path: "x", Added: 3}}, false},
		{"partial rename dropped", "3\t0\tx\x000\t0\t\x00old\x00", true, []FileStat{{Path: "x", Added: 3}}, false},
		{"bad counts", "a\tb\tx\x00", false, nil, true},
		{"negative", "-1\t2\tx\x00", false, nil, true},
		{"missing tab", "12x\x00", false, nil, true},
		{"empty rename side", "0\t0\t\x00\x00new\x00", false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNumstat([]byte(tt.in), tt.partial)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParseNumstat(f *testing.F) {
	for _, s := range []string{"", "1\t2\ta\x00", "-\t-\tb\x00", "0\t0\t\x00o\x00n\x00", "0\t0\t\x00o"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, partial bool) {
		fs, err := ParseNumstat(b, partial)
		if err != nil {
			return
		}
		for _, f := range fs {
			if f.Added < 0 || f.Deleted < 0 || f.Path == "" {
				t.Fatalf("bad entry %+v", f)
			}
		}
	})
}
