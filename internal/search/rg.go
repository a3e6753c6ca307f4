package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harnessd/harnessd/contract/errs"
)

// maxExcludeGlobs bounds the exclusion globs passed to rg; past it, excluded
// files are only filtered from rg's output (never reported, but rg reads them).
const maxExcludeGlobs = 4096

// SearchRG searches with ripgrep. It returns an errs.Unavailable error when
// s.RG is empty or cannot be run.
func (s *Searcher) SearchRG(ctx context.Context, root string, req Request) (Result, error) {
	if s.RG == "" {
		return Result{}, errs.New(errs.Unavailable, "ripgrep (rg) is not installed")
	}
	p, err := s.prepare(root, req)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.lim.Timeout)
	defer cancel()
	need := p.max + 1

	// rg and the two git listings run concurrently, so the search costs
	// about the slowest of them:
	//   - rg skips secret paths as it reads its output (p.exclude in
	//     readRG), so their text never reaches a Result;
	//   - the candidate list counts the excluded files (Result.Excluded);
	//   - tracked files that match an ignore rule are searched by git's rules
	//     but skipped by rg's walk: the Go engine searches them and the two
	//     ordered streams are merged.
	var (
		files, ti       []string
		filesErr, tiErr error
		rgMatches       []Match
		rgErr           error
		wg              sync.WaitGroup
	)
	wg.Add(2)
	if p.exclude != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			files, filesErr = p.listFiles(ctx)
		}()
	}
	go func() {
		defer wg.Done()
		ti, tiErr = p.trackedIgnored(ctx)
	}()
	go func() {
		defer wg.Done()
		rgMatches, rgErr = p.runRG(ctx, s.RG, nil, nil, need)
	}()
	wg.Wait()
	for _, err := range []error{filesErr, tiErr, rgErr} {
		if err != nil {
			return Result{}, ctxErr(ctx, err)
		}
	}
	excluded := 0
	for _, f := range files {
		if !isTemp(f) && (p.glob == nil || p.glob.match(f)) && p.exclude(f) {
			excluded++
		}
	}
	extra, _ := p.filter(ti)
	if len(extra) > 0 {
		// rg does not walk into ignored files; drop any it reported anyway
		// so they are not counted twice.
		extraSet := make(map[string]bool, len(extra))
		for _, f := range extra {
			extraSet[f] = true
		}
		kept := rgMatches[:0]
		for _, m := range rgMatches {
			if !extraSet[m.Path] {
				kept = append(kept, m)
			}
		}
		rgMatches = kept
	}
	ms := rgMatches
	if len(extra) > 0 {
		closeRoot, err := p.openRoot()
		if err != nil {
			return Result{}, err
		}
		defer closeRoot()
		goMatches, err := searchFiles(ctx, p, extra, need)
		if err != nil {
			return Result{}, ctxErr(ctx, err)
		}
		ms = mergeMatches(rgMatches, goMatches, need)
	}
	return p.result(ms, EngineRG, excluded), nil
}

// mergeMatches merges two ordered match lists and keeps the first need.
func mergeMatches(a, b []Match, need int) []Match {
	out := make([]Match, 0, min(len(a)+len(b), need))
	for len(out) < need && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && matchLess(a[0], b[0])) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

func matchLess(x, y Match) bool {
	if c := pathCompare(x.Path, y.Path); c != 0 {
		return c < 0
	}
	return x.Line < y.Line
}

func (p *plan) rgArgs(excludedPaths []string) []string {
	args := []string{
		"--json", "--no-config", "--hidden", "--no-follow", "--glob=!.git",
		"--max-filesize=" + strconv.FormatInt(p.lim.MaxFileSize, 10),
		"--sort=path", "--no-ignore-dot", "--no-ignore-parent",
		"--no-messages", "--no-mmap", "--encoding=none",
	}
	// Request.Glob is applied to rg's output, not passed as -g: rg's -g
	// whitelists files even when git ignores them.
	if len(excludedPaths) <= maxExcludeGlobs {
		for _, f := range excludedPaths {
			args = append(args, "--glob=!/"+escapeGlob(f))
		}
	}
	if p.m.lit != nil || !p.req.Regex {
		args = append(args, "--fixed-strings")
		if p.req.CaseInsensitive {
			args = append(args, "--ignore-case")
		}
		args = append(args, "--regexp="+p.req.Query)
	} else {
		args = append(args, "--regexp="+p.m.rgExpr)
	}
	return append(args, "--", ".")
}

// escapeGlob escapes a path for a gitignore-style rg glob.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '*', '?', '[', ']', '{', '}', '!', '#':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	if strings.HasSuffix(s, " ") {
		r := b.String()
		return r[:len(r)-1] + `\ `
	}
	return b.String()
}

// rgMessage is one line of rg --json output.
type rgMessage struct {
	Type string `json:"type"`
	Data struct {
		Path         rgData  `json:"path"`
		Lines        rgData  `json:"lines"`
		LineNumber   int     `json:"line_number"`
		BinaryOffset *uint64 `json:"binary_offset"`
		Submatches   []struct {
			Start int `json:"start"`
		} `json:"submatches"`
	} `json:"data"`
}

// rgData is rg's representation of possibly non-UTF-8 data.
type rgData struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (d rgData) raw() ([]byte, error) {
	if d.Text != nil {
		return []byte(*d.Text), nil
	}
	return base64.StdEncoding.DecodeString(d.Bytes)
}

// runRG runs rg and returns its first need accepted matches, killing rg once
// they are known.
func (p *plan) runRG(ctx context.Context, rg string, excludedPaths []string, skip map[string]bool, need int) ([]Match, error) {
	rctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := exec.CommandContext(rctx, rg, p.rgArgs(excludedPaths)...)
	cmd.Dir = p.root
	cmd.WaitDelay = time.Second
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "rg: %v", err)
	}
	wait, err := p.run(ctx, p.root, cmd)
	if err != nil {
		if errs.CodeOf(err) != errs.Internal && errs.CodeOf(err) != "" {
			return nil, err // the confinement refused: not a missing rg
		}
		return nil, errs.Wrap(errs.Unavailable, err, "cannot run rg: %v", err)
	}
	ms, complete, perr := p.readRG(stdout, skip, need)
	if !complete {
		kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, perr
	}
	if complete && werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return nil, errs.Wrap(errs.Internal, werr, "rg: %v", werr)
		}
		// Exit 1 is "no match"; exit 2 with --no-messages is a fatal error
		// such as a pattern rg rejects.
		if ee.ExitCode() != 1 && stderr.Len() > 0 {
			msg := strings.TrimSpace(stderr.String())
			if strings.Contains(msg, "regex") || strings.Contains(msg, "glob") {
				return nil, errs.New(errs.InvalidArgument, "rg rejected the query: %s", msg)
			}
			return nil, errs.New(errs.Internal, "rg failed: %s", msg)
		}
	}
	return ms, nil
}

// readRG decodes rg's JSON stream. complete is false when it stopped early
// because need matches were found.
func (p *plan) readRG(r io.Reader, skip map[string]bool, need int) (ms []Match, complete bool, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var (
		pending []Match // the current file's matches, kept until its end message
		keep    bool    // the current file may be reported
	)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var msg rgMessage
			if err := json.Unmarshal(line, &msg); err != nil {
				return nil, false, errs.Wrap(errs.Internal, err, "decoding rg output: %v", err)
			}
			switch msg.Type {
			case "begin":
				path, err := msg.Data.Path.raw()
				if err != nil {
					return nil, false, errs.Wrap(errs.Internal, err, "decoding rg path: %v", err)
				}
				rel := strings.TrimPrefix(string(path), "./")
				pending = pending[:0]
				keep = !skip[rel] && !isTemp(rel) && (p.glob == nil || p.glob.match(rel)) && (p.exclude == nil || !p.exclude(rel))
			case "match":
				if !keep || len(ms)+len(pending) >= need {
					continue
				}
				path, err := msg.Data.Path.raw()
				if err != nil {
					return nil, false, errs.Wrap(errs.Internal, err, "decoding rg path: %v", err)
				}
				text, err := msg.Data.Lines.raw()
				if err != nil {
					return nil, false, errs.Wrap(errs.Internal, err, "decoding rg line: %v", err)
				}
				col := 0
				if len(msg.Data.Submatches) > 0 {
					col = msg.Data.Submatches[0].Start
				}
				rel := strings.TrimPrefix(string(path), "./")
				pending = append(pending, p.makeMatch(rel, msg.Data.LineNumber, col, text))
			case "end":
				if keep && msg.Data.BinaryOffset == nil { // a NUL anywhere: binary, skipped
					ms = append(ms, pending...)
				}
				pending, keep = pending[:0], false
				if len(ms) >= need {
					return ms[:need], false, nil
				}
			}
		}
		if rerr == io.EOF {
			return ms, true, nil
		}
		if rerr != nil {
			return nil, false, errs.Wrap(errs.Internal, rerr, "reading rg output: %v", rerr)
		}
	}
}

// limitedBuffer keeps the first 64 KiB written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
