package suite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Generated-repository limits and shape (see GenerateRepo).
const (
	// MinGenFiles and MaxGenFiles bound --files.
	MinGenFiles = 20
	MaxGenFiles = 1_000_000
	// GenDirty tracked files are edited and GenUntracked files created
	// after the commit.
	GenDirty     = 5
	GenUntracked = 2
	// genMaxDepth is the deepest directory (root = 0); files sit at path
	// depth 1..genMaxDepth+1.
	genMaxDepth = 6
	// genGitTimeout bounds one git command of the generator (importing
	// 100,000 files takes seconds on tmpfs, minutes on a slow disk).
	genGitTimeout = 10 * time.Minute
	// genBinaryPath is the one binary file, at the root.
	genBinaryPath = "assets.bin"
	// GenGitignore is the generated .gitignore.
	GenGitignore = "# build output and local clutter\nbuild/\n*.log\n*.tmp\nnode_modules/\n.cache/\n"
)

// genKind is a file's language, by extension.
type genKind uint8

const (
	kindGo genKind = iota
	kindTS
	kindPy
	kindMD
	kindJSON
	kindTxt
	kindBinary
	kindGitignore
)

var kindExt = [...]string{kindGo: ".go", kindTS: ".ts", kindPy: ".py", kindMD: ".md", kindJSON: ".json", kindTxt: ".txt", kindBinary: ".bin"}

// kindWeights is the language mix of the text files (percent).
var kindWeights = [...]struct {
	k genKind
	w int
}{{kindGo, 30}, {kindTS, 20}, {kindPy, 20}, {kindMD, 10}, {kindJSON, 10}, {kindTxt, 10}}

// genWords name directories and files and fill their text. None of them
// is a secret path of the default denylist.
var genWords = strings.Fields(`alpha api app archive asset auth batch bridge buffer cache catalog
chart client cluster codec config core cursor data debug delta driver engine event export feature filter
flow format gateway graph handler history hook index ingest input kernel label layout ledger lexer loader
locale logger mapper matrix media memory merge metric model module monitor network node notify order
output packet page parser patch pipeline planner plugin policy pool portal profile proxy queue quota
reader record region render report request resolver route runtime sampler scanner schema scope search
server service session shard signal source stage state storage stream style table task template
tenant theme timer token_bucket trace tracker transform tree upload user util value vector view
watcher widget worker writer`)

// genFile is one planned file.
type genFile struct {
	path   string // slash-separated, relative
	kind   genKind
	size   int  // target size in bytes
	symbol bool // holds Symbol
}

// genPlan is the deterministic layout of a generated repository.
type genPlan struct {
	files    []genFile // tracked, in creation order; files[0] is .gitignore
	ignored  []genFile // matched by .gitignore, written before git add
	dirty    []int     // indices into files edited after the commit
	untrack  []genFile // created after the commit
	dirs     int       // directories holding at least one tracked file
	maxDepth int       // deepest path (components) of a tracked file
	symbols  int       // tracked files holding Symbol
}

// planRepo lays out n tracked files (n >= MinGenFiles) deterministically
// from seed: a breadth-first tree where each directory has 8-30 entries,
// 3-6 of them subdirectories down to genMaxDepth; a language mix; sizes
// mostly 0.3-4 KB (log-uniform), about 0.5% of 20-100 KB, two of ~1 MB and
// one binary; Symbol in min(36, n/4) small files; GenDirty small text
// files to edit and GenUntracked new files, one of them holding Symbol.
func planRepo(n int, seed uint64) genPlan {
	rng := rand.New(rand.NewPCG(seed, 0x5ca1ab1e))
	p := genPlan{files: make([]genFile, 0, n)}
	p.files = append(p.files, genFile{path: ".gitignore", kind: kindGitignore, size: len(GenGitignore)})
	p.files = append(p.files, genFile{path: genBinaryPath, kind: kindBinary, size: 48 << 10})
	type dir struct {
		path  string
		depth int
	}
	queue := []dir{{"", 0}}
	var all []dir
	usedDirs := map[string]bool{}
	holding := map[string]bool{}
	for len(p.files) < n {
		var d dir
		subs := 0
		if len(queue) > 0 {
			d, queue = queue[0], queue[1:]
			if d.depth < genMaxDepth {
				subs = 3 + rng.IntN(4)
			}
		} else { // the tree is full: more files in random directories
			d = all[rng.IntN(len(all))]
		}
		fan := 8 + rng.IntN(23)
		for range subs {
			base := genWords[rng.IntN(len(genWords))]
			name := path.Join(d.path, base)
			for i := 2; usedDirs[name]; i++ {
				name = path.Join(d.path, base+strconv.Itoa(i))
			}
			usedDirs[name] = true
			c := dir{name, d.depth + 1}
			queue = append(queue, c)
			all = append(all, c)
		}
		for i := 0; i < fan-subs && len(p.files) < n; i++ {
			k := pickKind(rng)
			base := genWords[rng.IntN(len(genWords))] + "_" + strconv.Itoa(len(p.files))
			f := genFile{path: path.Join(d.path, base+kindExt[k]), kind: k, size: smallSize(rng)}
			p.files = append(p.files, f)
			holding[d.path] = true
			p.maxDepth = max(p.maxDepth, strings.Count(f.path, "/")+1)
		}
	}
	p.dirs = len(holding)
	// Sizes: a few 20-100 KB files, two of ~1 MB (text, never the binary
	// or .gitignore: indices from 2 on).
	text := len(p.files) - 2
	for range max(1, n/200) {
		p.files[2+rng.IntN(text)].size = 20<<10 + rng.IntN(80<<10)
	}
	for range 2 {
		p.files[2+rng.IntN(text)].size = 1<<20 + rng.IntN(64<<10)
	}
	// Symbol in small files; dirty edits of other small files.
	small := func(i int) bool { return p.files[i].size <= 4096 && !p.files[i].symbol }
	want := min(36, n/4)
	for tries := 0; p.symbols < want && tries < 100*n; tries++ {
		if i := 2 + rng.IntN(text); small(i) {
			p.files[i].symbol = true
			p.symbols++
		}
	}
	picked := map[int]bool{}
	for tries := 0; len(p.dirty) < GenDirty && tries < 100*n; tries++ {
		if i := 2 + rng.IntN(text); small(i) && !picked[i] {
			picked[i] = true
			p.dirty = append(p.dirty, i)
		}
	}
	for u := range GenUntracked {
		at := path.Dir(p.files[2+rng.IntN(text)].path)
		f := genFile{path: path.Join(at, "untracked_note_"+strconv.Itoa(u+1)+".md"), kind: kindMD, size: 900, symbol: u == 0}
		p.untrack = append(p.untrack, f)
	}
	// Ignored: build output, logs, a vendored package.
	for i := range max(3, n/100) {
		p.ignored = append(p.ignored, genFile{path: "build/out/obj_" + strconv.Itoa(i) + ".txt", kind: kindTxt, size: smallSize(rng), symbol: i == 0})
	}
	for i := range 3 {
		at := path.Dir(p.files[2+rng.IntN(text)].path)
		p.ignored = append(p.ignored, genFile{path: path.Join(at, "debug_"+strconv.Itoa(i)+".log"), kind: kindTxt, size: smallSize(rng)})
	}
	p.ignored = append(p.ignored,
		genFile{path: "node_modules/leftpad/index.ts", kind: kindTS, size: 1200},
		genFile{path: "node_modules/leftpad/README.md", kind: kindMD, size: 700})
	return p
}

func pickKind(rng *rand.Rand) genKind {
	x := rng.IntN(100)
	for _, kw := range kindWeights {
		if x < kw.w {
			return kw.k
		}
		x -= kw.w
	}
	return kindTxt
}

// smallSize is log-uniform in [300, 4096] bytes.
func smallSize(rng *rand.Rand) int {
	lo, hi := math.Log(300), math.Log(4096)
	return int(math.Exp(lo + rng.Float64()*(hi-lo)))
}

// genContent returns the content of f, deterministic in (seed, f.path).
func genContent(f genFile, seed uint64) []byte {
	if f.kind == kindGitignore {
		return []byte(GenGitignore)
	}
	rng := rand.New(rand.NewPCG(seed, fnv64(f.path)))
	if f.kind == kindBinary {
		b := make([]byte, f.size)
		copy(b, "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
		for i := 16; i < len(b); i += 8 {
			v := rng.Uint64()
			for j := 0; j < 8 && i+j < len(b); j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		return b
	}
	var buf bytes.Buffer
	buf.Grow(f.size + 256)
	word := func() string { return genWords[rng.IntN(len(genWords))] }
	title := func(s string) string { return strings.ToUpper(s[:1]) + strings.ReplaceAll(s[1:], "_", "") }
	sym := f.symbol
	useSymbol := func() bool { s := sym; sym = false; return s }
	switch f.kind {
	case kindGo:
		pkg := strings.ReplaceAll(path.Base(path.Dir("/"+f.path)), "_", "")
		if pkg == "" || pkg == "/" || pkg[0] < 'a' || pkg[0] > 'z' {
			pkg = "main"
		}
		fmt.Fprintf(&buf, "// Package %s is generated by the harnessd bench.\npackage %s\n\nimport (\n\t\"errors\"\n\t\"strings\"\n)\n\n", pkg, pkg)
		for n := 0; buf.Len() < f.size; n++ {
			a, b := word(), word()
			fmt.Fprintf(&buf, "// %s%d %s the %s of a %s.\nfunc %s%d(name string, limit int) (int, error) {\n", title(a), n, a, b, word(), title(a), n)
			if useSymbol() {
				buf.WriteString("\tif i, err := index." + Symbol + "(name); err == nil {\n\t\treturn i, nil\n\t}\n")
			}
			fmt.Fprintf(&buf, "\tif limit > %d || strings.HasPrefix(name, %q) {\n\t\treturn 0, errors.New(%q)\n\t}\n\treturn len(name) + %d, nil\n}\n\n", rng.IntN(1000), b, a+": "+b, n)
		}
	case kindTS:
		buf.WriteString("// Generated by the harnessd bench.\nimport { strict } from \"./util\";\n\n")
		for n := 0; buf.Len() < f.size; n++ {
			a, b := word(), word()
			fmt.Fprintf(&buf, "export function %s%s%d(input: string, count: number): string {\n", a, title(b), n)
			if useSymbol() {
				buf.WriteString("  const at = widgets." + Symbol + "(input);\n")
			}
			fmt.Fprintf(&buf, "  if (count > %d) {\n    return strict(`%s ${input}`);\n  }\n  return input + %q;\n}\n\n", rng.IntN(500), b, word())
		}
	case kindPy:
		buf.WriteString("\"\"\"Generated by the harnessd bench.\"\"\"\n\nimport os\n\n\n")
		for n := 0; buf.Len() < f.size; n++ {
			a, b := word(), word()
			fmt.Fprintf(&buf, "def %s_%s_%d(value, limit=%d):\n    \"\"\"Return the %s of value.\"\"\"\n", a, b, n, rng.IntN(100), word())
			if useSymbol() {
				buf.WriteString("    idx = registry." + Symbol + "(value)\n")
			}
			fmt.Fprintf(&buf, "    if len(value) > limit:\n        return os.path.join(%q, value)\n    return value\n\n\n", b)
		}
	case kindJSON:
		buf.WriteString("[\n")
		for n := 0; buf.Len() < f.size; n++ {
			if n > 0 {
				buf.WriteString(",\n")
			}
			h := word()
			if useSymbol() {
				h = Symbol
			}
			fmt.Fprintf(&buf, "  {\"id\": %d, \"name\": %q, \"handler\": %q, \"tags\": [%q, %q], \"weight\": %d}", n, word(), h, word(), word(), rng.IntN(10000))
		}
		buf.WriteString("\n]\n")
	default: // md, txt
		if f.kind == kindMD {
			fmt.Fprintf(&buf, "# %s %s\n\n", title(word()), word())
		}
		for buf.Len() < f.size {
			if f.kind == kindMD && rng.IntN(6) == 0 {
				fmt.Fprintf(&buf, "## %s\n\n", title(word()))
			}
			if useSymbol() {
				buf.WriteString("Lookups go through " + Symbol + ", which keeps the index sorted.\n")
			}
			for range 6 + rng.IntN(10) {
				buf.WriteString(word())
				buf.WriteByte(' ')
			}
			buf.WriteString(word() + ".\n")
			if rng.IntN(4) == 0 {
				buf.WriteByte('\n')
			}
		}
	}
	return buf.Bytes()
}

// fnv64 is FNV-1a of s.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// GenRepo is a generated repository (see GenerateRepo).
type GenRepo struct {
	// Root is the canonical work tree.
	Root string
	// Files is the number of tracked files; Dirs the directories holding
	// them; MaxDepth the deepest file path (components); Bytes their size.
	Files    int
	Dirs     int
	MaxDepth int
	Bytes    int64
	// SymbolFiles is the number of tracked files holding Symbol.
	SymbolFiles int
	// Dirty are the edited tracked files, Untracked the new ones, Ignored
	// the files .gitignore matches (slash-separated).
	Dirty     []string
	Untracked []string
	Ignored   []string
	// Took is how long writing, committing and dirtying took.
	Took time.Duration
}

// Remove deletes the repository.
func (g *GenRepo) Remove() error { return os.RemoveAll(g.Root) }

// genDate is the author and committer date of the generated commit.
const genDate = "1767225600 +0000" // 2026-01-01T00:00:00Z

// GenerateRepo creates a repository of n tracked files (see planRepo for
// the shape) in a new directory under parent (os.TempDir() when empty),
// committed in one commit with a fixed identity and date and no user or
// system git configuration; then edits GenDirty tracked files and creates
// GenUntracked files. The same n and seed give the same tree and commit.
// Progress lines go to progress (nil: none).
//
// The files are written by a small worker pool and streamed at the same
// time into one `git fast-import`, which writes one pack: `git add -A` of
// 100,000 files spends most of a minute creating 100,000 loose objects.
// `git reset` then builds the index (with the files' stat data) from the
// commit.
func GenerateRepo(ctx context.Context, parent string, n int, seed uint64, progress io.Writer) (*GenRepo, error) {
	if n < MinGenFiles || n > MaxGenFiles {
		return nil, fmt.Errorf("generate: %d files is outside %d..%d", n, MinGenFiles, MaxGenFiles)
	}
	if progress == nil {
		progress = io.Discard
	}
	start := time.Now()
	dir, err := os.MkdirTemp(parent, "harnessd-bench-scale-"+strconv.Itoa(n)+"-")
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	g, err := generate(ctx, dir, n, seed, progress)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g.Took = time.Since(start)
	return g, nil
}

func generate(ctx context.Context, dir string, n int, seed uint64, progress io.Writer) (*GenRepo, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	p := planRepo(n, seed)
	g := &GenRepo{Root: root, Files: len(p.files), Dirs: p.dirs, MaxDepth: p.maxDepth, SymbolFiles: p.symbols}
	fmt.Fprintf(progress, "scale: generating %d files in %s\n", n, root)
	if err := runGitT(ctx, root, "init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	wrote := time.Now()
	all := append(append([]genFile(nil), p.files...), p.ignored...)
	if g.Bytes, err = importAll(ctx, root, all, len(p.files), seed, n); err != nil {
		return nil, err
	}
	for _, f := range p.ignored {
		g.Ignored = append(g.Ignored, f.path)
	}
	fmt.Fprintf(progress, "scale: wrote and committed %d files (%.1f MB tracked) in %s; building the index\n",
		len(all), float64(g.Bytes)/1e6, time.Since(wrote).Round(time.Millisecond))
	if err := runGitT(ctx, root, "reset", "-q"); err != nil {
		return nil, err
	}
	for _, i := range p.dirty {
		f := p.files[i]
		body := append(genContent(f, seed), "\n// edited by the bench: the work tree is dirty\n"...)
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(f.path)), body, 0o644); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		g.Dirty = append(g.Dirty, f.path)
	}
	for _, f := range p.untrack {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(f.path)), genContent(f, seed), 0o644); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		g.Untracked = append(g.Untracked, f.path)
	}
	// Refresh the index's stat data once more, so that no entry written in
	// the same clock tick as the index stays "racily clean" (re-read by
	// every status).
	if err := runGitT(ctx, root, "update-index", "-q", "--refresh"); err != nil && !strings.Contains(err.Error(), "needs update") {
		return nil, err
	}
	return g, nil
}

// genBody is one generated file for the importer.
type genBody struct {
	i    int
	body []byte
}

// importAll writes files under root with a small worker pool and streams
// the first committed of them into `git fast-import` as one commit on
// main. It returns the bytes of the committed files.
func importAll(ctx context.Context, root string, files []genFile, committed int, seed uint64, n int) (int64, error) {
	dirs := map[string]bool{}
	for _, f := range files {
		if d := path.Dir(f.path); d != "." && !dirs[d] {
			dirs[d] = true
			if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
				return 0, fmt.Errorf("generate: %w", err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, genGitTimeout)
	defer cancel()
	imp := exec.CommandContext(ctx, "git", "fast-import", "--quiet", "--done")
	imp.Dir = root
	imp.Env = gitEnv()
	var impOut bytes.Buffer
	imp.Stdout, imp.Stderr = &impOut, &impOut
	stdin, err := imp.StdinPipe()
	if err != nil {
		return 0, fmt.Errorf("generate: %w", err)
	}
	if err := imp.Start(); err != nil {
		return 0, fmt.Errorf("generate: git fast-import: %w", err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)

	next := make(chan int)
	bodies := make(chan genBody, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex // protects writeErr
	var writeErr error
	for range max(2, runtime.NumCPU()) {
		wg.Go(func() {
			for i := range next {
				f := files[i]
				body := genContent(f, seed)
				if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(f.path)), body, 0o644); err != nil {
					mu.Lock()
					writeErr = errors.Join(writeErr, err)
					mu.Unlock()
				}
				bodies <- genBody{i, body}
			}
		})
	}
	stop := make(chan struct{})
	go func() {
		defer close(next)
		for i := range files {
			select {
			case next <- i:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(bodies) }()
	var total int64
	var streamErr error
	for b := range bodies {
		if b.i >= committed || streamErr != nil {
			continue
		}
		total += int64(len(b.body))
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", b.i+1, len(b.body))
		w.Write(b.body)
		if _, streamErr = w.WriteString("\n"); streamErr != nil {
			close(stop)
		}
	}
	if streamErr == nil {
		msg := "generated repository: " + strconv.Itoa(n) + " files\n"
		fmt.Fprintf(w, "commit refs/heads/main\nauthor harnessd bench <bench@harnessd.invalid> %s\ncommitter harnessd bench <bench@harnessd.invalid> %s\ndata %d\n%s",
			genDate, genDate, len(msg), msg)
		for i := range committed {
			fmt.Fprintf(w, "M 100644 :%d %s\n", i+1, files[i].path)
		}
		w.WriteString("\ndone\n")
		streamErr = w.Flush()
	}
	cerr := stdin.Close()
	werr := imp.Wait()
	if err := errors.Join(writeErr, ctx.Err()); err != nil {
		return 0, fmt.Errorf("generate: %w", err)
	}
	if err := errors.Join(streamErr, cerr, werr); err != nil {
		return 0, fmt.Errorf("generate: git fast-import: %v: %s", err, bytes.TrimSpace(impOut.Bytes()))
	}
	return total, nil
}

// runGitT is runGit with the generator's longer timeout.
func runGitT(ctx context.Context, dir string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, genGitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
