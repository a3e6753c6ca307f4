package main

// Mixed load shared by the crash tests (crash_e2e_test.go) and the soak
// (soak_test.go): agents that each own one file of the repository and
// check every answer they get, and the audit check every acknowledged
// mutation must pass.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// caller runs one operation: its result, or its error (an *errs.Error for
// an operation's error, UNAVAILABLE when the daemon could not be reached).
type caller func(ctx context.Context, op string, args any) (json.RawMessage, error)

// apiCaller calls through the JSON API.
func apiCaller(c *client.Client) caller { return c.Call }

// mcpCaller calls through an MCP session: a tool error comes back as the
// *errs.Error of its structured content.
func mcpCaller(s *mcp.ClientSession) caller {
	return func(ctx context.Context, op string, args any) (json.RawMessage, error) {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: op, Arguments: args})
		if err != nil {
			if ctx.Err() != nil {
				return nil, errs.Wrap(errs.CodeOf(ctx.Err()), err, "mcp %s: %v", op, err)
			}
			return nil, errs.Wrap(errs.Unavailable, err, "mcp %s: %v", op, err)
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, errs.New(errs.Internal, "mcp %s: encode structured content: %v", op, err)
		}
		if res.IsError {
			var body struct {
				Error *errs.Error `json:"error"`
			}
			if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
				return nil, body.Error
			}
			return nil, errs.New(errs.Internal, "mcp %s: error result without a code: %.200s", op, b)
		}
		if tc, ok := firstText(res); ok && op == "read_file" {
			// read_file's content is its text block only; the structured
			// content is its metadata.
			var m map[string]any
			if err := json.Unmarshal(b, &m); err == nil {
				m["content"] = tc
				b, _ = json.Marshal(m)
			}
		}
		return b, nil
	}
}

// firstText is the text of res's first content block.
func firstText(res *mcp.CallToolResult) (string, bool) {
	if len(res.Content) == 0 {
		return "", false
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return "", false
	}
	return tc.Text, true
}

// badResult is an answer that came back OK but is wrong.
type badResult struct{ op, msg string }

func (e *badResult) Error() string { return e.op + ": wrong result: " + e.msg }

// codeOf names an error for the tallies: BAD_RESULT or the harnessd code.
func codeOf(err error) string {
	if _, ok := err.(*badResult); ok {
		return "BAD_RESULT"
	}
	return string(errs.CodeOf(err))
}

// The load mix: operations and their weights. "replay" re-sends one of the
// agent's acknowledged patches, which must answer replayed and write
// nothing.
var loadMix = []struct {
	op     string
	weight int
}{
	{"read_file", 22},
	{"search", 14},
	{"git_status", 14},
	{"git_diff", 10},
	{"run_command", 10},
	{"apply_patch", 25},
	{"replay", 5},
}

// loadNeedles is how many lines of loadRepoFiles' sources say "needle".
const loadNeedles = 8

// loadRepoFiles are the files of a load repository for n agents: sources
// to search, and one empty tracked file per agent.
func loadRepoFiles(n int) map[string]string {
	files := map[string]string{}
	for i := 0; i < loadNeedles/2; i++ {
		files[fmt.Sprintf("src/pkg%d/pkg.go", i)] = fmt.Sprintf("package pkg%d\n\n// F finds the needle %d.\nfunc F() int { return %d } // needle\n", i, i, i)
	}
	for k := 0; k < n; k++ {
		files[agentPath(k)] = ""
	}
	return files
}

func agentPath(k int) string { return fmt.Sprintf("load/c%02d.txt", k) }

// loadAgent is one client of the mixed load. It alone writes its file,
// one patch at a time, so it knows what every read of it must show.
// Not safe for concurrent use: one goroutine drives an agent.
type loadAgent struct {
	n      int
	repoID string
	prefix string // of its request ids
	reps   int    // times a patch repeats its token
	call   caller
	rng    *rand.Rand

	seq    int
	last   string // the file's content after the last acknowledged patch
	lastID string
	// pending is the patch whose answer never came (the daemon died);
	// failed are the patches that answered an error.
	pending string
	failed  []string
	// acked are the acknowledged request ids, in order; ackedRound[i] is
	// the round acked[i] was acknowledged in.
	acked      []string
	ackedRound []int
	ackedHow   []string
	round      int
	tokens     map[string]uint64 // highest fencing token seen, by key
	stats      loadStats
}

func newLoadAgent(n int, repoID, prefix string, reps int, seed int64) *loadAgent {
	return &loadAgent{n: n, repoID: repoID, prefix: prefix, reps: reps, rng: rand.New(rand.NewSource(seed)),
		tokens: map[string]uint64{}, stats: newLoadStats()}
}

func (a *loadAgent) path() string { return agentPath(a.n) }

// patchContent is the file body request id writes: its token repeated, so
// a torn file (parts of two writes) is detectable.
func (a *loadAgent) patchContent(id string) string { return strings.Repeat(id+"|", a.reps) }

func (a *loadAgent) patchArgs(id string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"repo_id": a.repoID, "request_id": id,
		"operations": []map[string]any{{"op": "write", "path": a.path(), "content": a.patchContent(id)}}})
	return b
}

// ack records id as acknowledged; how says by what.
func (a *loadAgent) ack(id, how string) {
	a.acked = append(a.acked, id)
	a.ackedRound = append(a.ackedRound, a.round)
	a.ackedHow = append(a.ackedHow, how)
	a.last, a.lastID = a.patchContent(id), id
}

// How a request was acknowledged as succeeded.
const (
	ackAnswered = "answered OK"
	ackReplayed = "in flight at the kill, replayed after the restart"
	ackRanNow   = "in flight at the kill, ran after the restart"
)

// pick draws an operation from loadMix.
func (a *loadAgent) pick() string {
	total := 0
	for _, m := range loadMix {
		total += m.weight
	}
	r := a.rng.Intn(total)
	for _, m := range loadMix {
		if r < m.weight {
			if m.op == "replay" && len(a.acked) == 0 {
				return "apply_patch"
			}
			return m.op
		}
		r -= m.weight
	}
	return loadMix[0].op
}

// step runs one operation of the mix and checks its answer; it returns
// the operation and its error (a *badResult for a wrong answer).
func (a *loadAgent) step(ctx context.Context) (string, error) {
	op := a.pick()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	err := a.run(ctx, op)
	a.stats.record(op, time.Since(start), err)
	return op, err
}

func (a *loadAgent) run(ctx context.Context, op string) error {
	switch op {
	case "read_file":
		raw, err := a.call(ctx, "read_file", map[string]any{"repo_id": a.repoID, "path": a.path()})
		if err != nil {
			return err
		}
		var r struct {
			Content string `json:"content"`
			SHA256  string `json:"sha256"`
		}
		_ = json.Unmarshal(raw, &r)
		if sum := sha256.Sum256([]byte(a.last)); r.SHA256 != hex.EncodeToString(sum[:]) || r.Content != a.last {
			return &badResult{op, fmt.Sprintf("%s is %.40q (sha256 %.12s), want the content of %q", a.path(), r.Content, r.SHA256, a.lastID)}
		}
	case "search":
		raw, err := a.call(ctx, "search", map[string]any{"repo_id": a.repoID, "query": "needle"})
		if err != nil {
			return err
		}
		var r struct {
			Matches []struct {
				Path string `json:"path"`
			} `json:"matches"`
		}
		_ = json.Unmarshal(raw, &r)
		if len(r.Matches) != loadNeedles {
			return &badResult{op, fmt.Sprintf("%d matches of needle, want %d", len(r.Matches), loadNeedles)}
		}
	case "git_status":
		raw, err := a.call(ctx, "git_status", map[string]any{"repo_id": a.repoID})
		if err != nil {
			return err
		}
		var r struct {
			Branch   string `json:"branch"`
			Head     string `json:"head"`
			Unstaged []struct {
				Path string `json:"path"`
			} `json:"unstaged"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return &badResult{op, err.Error()}
		}
		if r.Branch != "main" || r.Head == "" {
			return &badResult{op, fmt.Sprintf("branch %q, head %q, want main and a commit", r.Branch, r.Head)}
		}
		changed := false
		for _, e := range r.Unstaged {
			changed = changed || e.Path == a.path()
		}
		if a.last != "" && !changed {
			return &badResult{op, fmt.Sprintf("%s is not listed as changed", a.path())}
		}
	case "git_diff":
		raw, err := a.call(ctx, "git_diff", map[string]any{"repo_id": a.repoID, "paths": []string{a.path()}})
		if err != nil {
			return err
		}
		var r struct {
			Patch string `json:"patch"`
		}
		_ = json.Unmarshal(raw, &r)
		if a.lastID != "" && !strings.Contains(r.Patch, a.lastID+"|") {
			return &badResult{op, fmt.Sprintf("the diff of %s does not show %q: %.200q", a.path(), a.lastID, r.Patch)}
		}
	case "run_command":
		raw, err := a.call(ctx, "run_command", map[string]any{"repo_id": a.repoID, "argv": []string{"ls", "load"}})
		if err != nil {
			return err
		}
		var r struct {
			ExitCode      int    `json:"exit_code"`
			TreeChanged   bool   `json:"tree_changed"`
			TreeChangedBy string `json:"tree_changed_by"`
			Stdout        struct {
				Text string `json:"text"`
			} `json:"stdout"`
		}
		_ = json.Unmarshal(raw, &r)
		// The other agents' patches change the tree while ls runs: that
		// is "others"; ls itself changes nothing.
		changedByLs := r.TreeChanged && r.TreeChangedBy != "others"
		if r.ExitCode != 0 || changedByLs || !strings.Contains(r.Stdout.Text, filepath.Base(a.path())) {
			return &badResult{op, fmt.Sprintf("ls load: exit %d, tree_changed %v by %q, stdout %.100q", r.ExitCode, r.TreeChanged, r.TreeChangedBy, r.Stdout.Text)}
		}
	case "apply_patch":
		a.seq++
		id := fmt.Sprintf("%s-%06d", a.prefix, a.seq)
		raw, err := a.call(ctx, "apply_patch", a.patchArgs(id))
		if err != nil {
			if errs.CodeOf(err) == errs.Unavailable {
				a.pending = id
			} else {
				a.failed = append(a.failed, id)
			}
			return err
		}
		res, err := decodePatch(raw)
		if err != nil {
			return &badResult{op, err.Error()}
		}
		if res.Replayed {
			return &badResult{op, fmt.Sprintf("new request %s answered replayed", id)}
		}
		if err := a.fenced(id, res.FencingTokens); err != nil {
			return err
		}
		a.ack(id, ackAnswered)
	case "replay":
		id := a.acked[a.rng.Intn(len(a.acked))]
		raw, err := a.call(ctx, "apply_patch", a.patchArgs(id))
		if err != nil {
			return err
		}
		res, err := decodePatch(raw)
		if err != nil {
			return &badResult{op, err.Error()}
		}
		if !res.Replayed {
			return &badResult{op, fmt.Sprintf("acknowledged request %s ran again (replayed: false)", id)}
		}
	default:
		panic("unknown load op " + op)
	}
	return nil
}

type patchResult struct {
	Replayed      bool              `json:"replayed"`
	FencingTokens map[string]uint64 `json:"fencing_tokens"`
}

func decodePatch(raw json.RawMessage) (patchResult, error) {
	var r patchResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("decode apply_patch result: %v", err)
	}
	if len(r.FencingTokens) == 0 {
		return r, fmt.Errorf("apply_patch result without fencing tokens: %.200s", raw)
	}
	return r, nil
}

// fenced checks the tokens of a patch that ran now are above every token
// the agent saw for the same keys (its keys are its own), also across
// restarts, and records them.
func (a *loadAgent) fenced(id string, tokens map[string]uint64) error {
	for k, tok := range tokens {
		if tok <= a.tokens[k] {
			return &badResult{"apply_patch", fmt.Sprintf("%s ran with token %d for %s, not above %d", id, tok, k, a.tokens[k])}
		}
		a.tokens[k] = tok
	}
	return nil
}

// loadStats are one agent's tallies: latencies of successful calls and
// errors, by operation.
type loadStats struct {
	lat    map[string][]time.Duration
	errs   map[string]int // "op CODE" -> count
	sample map[string]string
}

func newLoadStats() loadStats {
	return loadStats{lat: map[string][]time.Duration{}, errs: map[string]int{}, sample: map[string]string{}}
}

func (s *loadStats) record(op string, d time.Duration, err error) {
	if err == nil {
		s.lat[op] = append(s.lat[op], d)
		return
	}
	k := op + " " + codeOf(err)
	s.errs[k]++
	if _, ok := s.sample[k]; !ok {
		s.sample[k] = err.Error()
	}
}

func (s *loadStats) merge(o loadStats) {
	for op, l := range o.lat {
		s.lat[op] = append(s.lat[op], l...)
	}
	for k, n := range o.errs {
		s.errs[k] += n
		if _, ok := s.sample[k]; !ok {
			s.sample[k] = o.sample[k]
		}
	}
}

func (s *loadStats) ops() (ok, failed int) {
	for _, l := range s.lat {
		ok += len(l)
	}
	for _, n := range s.errs {
		failed += n
	}
	return ok, failed
}

// percentile returns the q-quantile (0..1) of sorted.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

// table formats the per-operation figures: calls, errors, p50, p99, max.
func (s *loadStats) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %8s %7s %9s %9s %9s\n", "op", "ok", "errors", "p50 ms", "p99 ms", "max ms")
	for _, m := range loadMix {
		l := append([]time.Duration(nil), s.lat[m.op]...)
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		failed := 0
		for k, n := range s.errs {
			if strings.HasPrefix(k, m.op+" ") {
				failed += n
			}
		}
		ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) }
		fmt.Fprintf(&b, "%-12s %8d %7d %9s %9s %9s\n", m.op, len(l), failed, ms(percentile(l, .5)), ms(percentile(l, .99)), ms(percentile(l, 1)))
	}
	return b.String()
}

// errorSummary lists the error tallies with one message each.
func (s *loadStats) errorSummary() string {
	if len(s.errs) == 0 {
		return "none"
	}
	var ks []string
	for k := range s.errs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "\n  %s: %d (e.g. %.300s)", k, s.errs[k], s.sample[k])
	}
	return b.String()
}

// humanClient returns a client of the daemon on dataDir with its human
// token (audit queries need it).
func humanClient(t *testing.T, dataDir string) *client.Client {
	t.Helper()
	p := daemon.PathsOf(dataDir)
	tok, err := daemon.ReadToken(p)
	if err != nil || tok == "" {
		t.Fatalf("read the human token of %s: %v", dataDir, err)
	}
	return client.Unix(p.Socket).WithToken(tok)
}

// checkAudited reads the whole audit log and fails unless every id in
// acked (acknowledged as succeeded: an OK answer, or a replay of one after
// a restart; the value says which) has
// exactly one mutation entry with outcome succeeded and the chain is
// intact. No request id has two succeeded entries (written twice).
func checkAudited(t *testing.T, dataDir string, acked map[string]string, round int) {
	t.Helper()
	c := humanClient(t, dataDir)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	succeeded := map[string]int{}
	var after uint64
	for {
		q := url.Values{"kind": {"mutation"}, "limit": {"1000"}, "after_seq": {strconv.FormatUint(after, 10)}}
		raw, err := c.Get(ctx, "/v1/audit?"+q.Encode())
		if err != nil {
			t.Fatalf("round %d: audit query: %v", round, err)
		}
		var page struct {
			Entries []struct {
				Seq       uint64 `json:"seq"`
				Kind      string `json:"kind"`
				RequestID string `json:"request_id"`
				Outcome   string `json:"outcome"`
			} `json:"entries"`
			More bool `json:"more"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatalf("round %d: decode audit page: %v", round, err)
		}
		for _, e := range page.Entries {
			if e.Kind == "mutation" && e.Outcome == "succeeded" {
				succeeded[e.RequestID]++
			}
			after = e.Seq
		}
		if !page.More || len(page.Entries) == 0 {
			break
		}
	}
	var missing, twice []string
	for id, how := range acked {
		if succeeded[id] == 0 {
			missing = append(missing, id+" ("+how+")")
		}
	}
	for id, n := range succeeded {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d)", id, n))
		}
	}
	sort.Strings(missing)
	sort.Strings(twice)
	failed := false
	if len(missing) > 0 {
		failed = true
		t.Errorf("round %d: %d of %d acknowledged mutations have no succeeded audit entry, e.g. %s",
			round, len(missing), len(acked), strings.Join(missing[:min(len(missing), 10)], ", "))
	}
	if len(twice) > 0 {
		failed = true
		t.Errorf("round %d: %d request ids have more than one succeeded audit entry: %s",
			round, len(twice), strings.Join(twice[:min(len(twice), 10)], ", "))
	}
	raw, err := c.Get(ctx, "/v1/audit/verify")
	if err != nil {
		t.Fatalf("round %d: audit verify: %v", round, err)
	}
	var v struct {
		OK           bool   `json:"ok"`
		Checked      int    `json:"checked"`
		BrokenSeq    uint64 `json:"broken_seq"`
		BrokenReason string `json:"broken_reason"`
	}
	_ = json.Unmarshal(raw, &v)
	if !v.OK {
		failed = true
		t.Errorf("round %d: audit verify: not intact after %d entries: seq %d: %s", round, v.Checked, v.BrokenSeq, v.BrokenReason)
	}
	if failed {
		t.FailNow()
	}
}

// envInt reads a positive integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
