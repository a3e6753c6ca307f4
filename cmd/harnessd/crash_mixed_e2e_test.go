package main

// The mixed-write kill -9 test (issue #32): every kind of acknowledged
// effect — patches, runs and their stages and notes, target writes,
// copies and moves, reverts, run_revert, commits, job starts — under
// kill -9 at random moments, checked after every restart.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// mixAnswer is what the test reads of a write's answer.
type mixAnswer struct {
	Replayed      bool              `json:"replayed"`
	ReceiptID     string            `json:"receipt_id"`
	FencingToken  uint64            `json:"fencing_token"`
	FencingTokens map[string]uint64 `json:"fencing_tokens"`
	HoldSeqs      []uint64          `json:"hold_seqs"`
	WorkspaceID   string            `json:"workspace_id"`
	Commit        string            `json:"commit"`
	At            time.Time         `json:"at"`
	JobID         string            `json:"job_id"`
	RunID         string            `json:"run_id"`
}

// tokens are the fencing tokens of a write that ran: its keys' (a
// repository's write) or its root's slot (a target's, keyed by workspace).
func (a mixAnswer) tokens() map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range a.FencingTokens {
		out[k] = v
	}
	if a.WorkspaceID != "" && len(a.HoldSeqs) > 0 {
		out["target:"+a.WorkspaceID] = a.HoldSeqs[0]
	}
	return out
}

// mixReq is one request with a request_id: what was sent and, once
// acknowledged, what answered.
type mixReq struct {
	id, op string
	args   json.RawMessage
	ans    mixAnswer
	how    string // how it was acknowledged (ackAnswered, ...)
	round  int
	// apply changes the agent's model once the request is acknowledged.
	apply func(mixAnswer)
}

// mixRun is what an agent knows of one of its runs.
type mixRun struct {
	id     string
	stages []string // acknowledged completed stages
	notes  []string // acknowledged observation texts
	ended  bool     // run_end acknowledged
}

// standing is one of the agent's patches whose write still stands, and
// the file's content before it.
type standing struct{ receipt, before string }

// mixAgent drives one client of the mixed-write load. It alone writes its
// repository file and its target, so it knows what every write will do.
// One goroutine drives an agent at a time.
type mixAgent struct {
	n                  int
	repoID, targetID   string
	call               caller
	rng                *rand.Rand
	round, seq         int
	run                *mixRun
	runs               []*mixRun
	content            string // its file's content as far as it knows
	stack              []standing
	copies             []string // copies made and not moved yet
	pending            *mixReq  // sent, no answer (the daemon died)
	acked              []*mixReq
	unknown            []*mixReq
	tokens, floor      map[string]uint64
	counts             map[string]int // acknowledged, by kind
	freshAfterRestarts int
}

func (a *mixAgent) file() string { return fmt.Sprintf("mix/a%02d.txt", a.n) }

func (a *mixAgent) nextID(kind string) string {
	a.seq++
	return fmt.Sprintf("mx%02d-r%d-%s-%05d", a.n, a.round, kind, a.seq)
}

// mixWeights is the load: operation and weight.
var mixWeights = []struct {
	op string
	w  int
}{
	{"apply_patch", 24}, {"revert", 7}, {"run_revert", 3}, {"git_commit", 6},
	{"run_observe", 7}, {"run_stage", 5}, {"run_cycle", 2},
	{"target_write_file", 10}, {"target_copy", 6}, {"target_move", 5},
	{"job_start", 3},
}

func (a *mixAgent) pick() string {
	total := 0
	for _, m := range mixWeights {
		total += m.w
	}
	r := a.rng.Intn(total)
	for _, m := range mixWeights {
		if r < m.w {
			return m.op
		}
		r -= m.w
	}
	return "apply_patch"
}

// step runs one operation and checks its answer.
func (a *mixAgent) step(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if a.run == nil {
		return a.startRun(ctx)
	}
	switch op := a.pick(); op {
	case "run_observe":
		text := a.nextID("note")
		if _, err := a.call(ctx, "run_observe", map[string]any{"run_id": a.run.id, "kind": "finding", "text": text}); err != nil {
			return err
		}
		a.run.notes = append(a.run.notes, text)
		a.counts["run_observe"]++
	case "run_stage":
		st := a.nextID("stage")
		for _, s := range []string{"started", "completed"} {
			if _, err := a.call(ctx, "run_stage", map[string]any{"run_id": a.run.id, "stage": st, "status": s}); err != nil {
				return err
			}
		}
		a.run.stages = append(a.run.stages, st)
		a.counts["run_stage"]++
	case "run_cycle":
		return a.endRun(ctx)
	case "revert":
		if len(a.stack) == 0 {
			return a.patch(ctx)
		}
		top := a.stack[len(a.stack)-1]
		return a.write(ctx, "revert", map[string]any{"repo_id": a.repoID, "receipt_id": top.receipt, "run_id": a.run.id, "wait_ms": 10000},
			func(mixAnswer) { a.stack = a.stack[:len(a.stack)-1]; a.content = top.before })
	case "run_revert":
		if len(a.stack) == 0 {
			return a.patch(ctx)
		}
		base := a.stack[0].before
		if err := a.write(ctx, "run_revert", map[string]any{"run_id": a.run.id, "wait_ms": 10000},
			func(mixAnswer) { a.stack, a.content = nil, base }); err != nil {
			return err
		}
		return a.endRun(ctx) // its writes are undone: the next ones go to a new run
	case "git_commit":
		raw, err := a.call(ctx, "git_status", map[string]any{"repo_id": a.repoID})
		if err != nil {
			return err
		}
		var st struct {
			Unstaged []struct {
				Path string `json:"path"`
			} `json:"unstaged"`
		}
		_ = json.Unmarshal(raw, &st)
		changed := false
		for _, e := range st.Unstaged {
			changed = changed || e.Path == a.file()
		}
		if !changed {
			return a.patch(ctx)
		}
		// A commit changes no file of the work tree: the standing patches
		// stay revertable.
		return a.write(ctx, "git_commit", map[string]any{"repo_id": a.repoID, "message": "mix: agent " + strconv.Itoa(a.n), "paths": []string{a.file()}, "wait_ms": 10000}, nil)
	case "target_write_file":
		return a.write(ctx, op, map[string]any{"target_id": a.targetID, "path": "w.txt", "content": strings.Repeat("w|", 100) + strconv.Itoa(a.seq), "wait_ms": 10000}, nil)
	case "target_copy":
		to := fmt.Sprintf("c-%05d.txt", a.seq+1)
		return a.write(ctx, op, map[string]any{"target_id": a.targetID, "from": "w.txt", "to": to, "wait_ms": 10000},
			func(mixAnswer) { a.copies = append(a.copies, to) })
	case "target_move":
		if len(a.copies) == 0 {
			return a.write(ctx, "target_write_file", map[string]any{"target_id": a.targetID, "path": "w.txt", "content": "w " + strconv.Itoa(a.seq), "wait_ms": 10000}, nil)
		}
		from := a.copies[0]
		a.copies = a.copies[1:] // sent: moved or not, it is not moved again
		return a.write(ctx, op, map[string]any{"target_id": a.targetID, "from": from, "to": "m-" + strings.TrimPrefix(from, "c-"), "wait_ms": 10000}, nil)
	case "job_start":
		return a.write(ctx, op, map[string]any{"repo_id": a.repoID, "argv": []string{"ls", "mix"}, "timeout_s": 60}, nil)
	default:
		return a.patch(ctx)
	}
	return nil
}

func (a *mixAgent) patch(ctx context.Context) error {
	before := a.content
	var body string
	return a.write(ctx, "apply_patch", map[string]any{"repo_id": a.repoID, "run_id": a.run.id, "wait_ms": 10000,
		"operations": []map[string]any{{"op": "write", "path": a.file(), "content": "@BODY@"}}},
		func(ans mixAnswer) { a.stack = append(a.stack, standing{ans.ReceiptID, before}); a.content = body },
		func(id string) string { body = strings.Repeat(id+"|", 200); return body })
}

// write sends a write with a fresh request_id; apply updates the model
// once it is acknowledged. body, if given, makes the content "@BODY@"
// stands for from the request id.
func (a *mixAgent) write(ctx context.Context, op string, args map[string]any, apply func(mixAnswer), body ...func(string) string) error {
	id := a.nextID(op)
	args["request_id"] = id
	raw, _ := json.Marshal(args)
	if len(body) > 0 {
		b, _ := json.Marshal(body[0](id))
		raw = json.RawMessage(strings.Replace(string(raw), `"@BODY@"`, string(b), 1))
	}
	r := &mixReq{id: id, op: op, args: raw, round: a.round, apply: apply}
	ans, err := a.send(ctx, r)
	if err != nil {
		if errs.CodeOf(err) == errs.Unavailable {
			a.pending = r
		}
		return err
	}
	if ans.Replayed {
		return &badResult{op, fmt.Sprintf("new request %s answered replayed", id)}
	}
	if err := a.fresh(r, ans); err != nil {
		return err
	}
	a.ack(r, ans, ackAnswered)
	return nil
}

func (a *mixAgent) send(ctx context.Context, r *mixReq) (mixAnswer, error) {
	var ans mixAnswer
	raw, err := a.call(ctx, r.op, r.args)
	if err != nil {
		return ans, err
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return ans, &badResult{r.op, fmt.Sprintf("decode: %v: %.200s", err, raw)}
	}
	if r.op == "job_start" {
		if ans.JobID == "" {
			return ans, &badResult{r.op, fmt.Sprintf("no job_id: %.200s", raw)}
		}
	} else if ans.ReceiptID == "" || len(ans.tokens()) == 0 {
		return ans, &badResult{r.op, fmt.Sprintf("no receipt_id or fencing tokens: %.300s", raw)}
	}
	return ans, nil
}

// fresh checks the tokens of a write that ran now: above every token the
// agent saw for the key, and above every token issued before the last
// restart (the floor).
func (a *mixAgent) fresh(r *mixReq, ans mixAnswer) error {
	for k, tok := range ans.tokens() {
		if tok <= a.tokens[k] || tok <= a.floor[k] {
			return &badResult{r.op, fmt.Sprintf("%s ran with token %d for %s, not above %d (this agent's) and %d (before the restart)", r.id, tok, k, a.tokens[k], a.floor[k])}
		}
		a.tokens[k] = tok
	}
	return nil
}

func (a *mixAgent) ack(r *mixReq, ans mixAnswer, how string) {
	r.ans, r.how = ans, how
	a.acked = append(a.acked, r)
	a.counts[r.op]++
	if r.apply != nil {
		r.apply(ans)
	}
}

func (a *mixAgent) startRun(ctx context.Context) error {
	raw, err := a.call(ctx, "run_start", map[string]any{"goal": fmt.Sprintf("mixed writes of agent %d", a.n), "repo_id": a.repoID})
	if err != nil {
		return err
	}
	var st struct {
		RunID string `json:"run_id"`
	}
	if json.Unmarshal(raw, &st) != nil || st.RunID == "" {
		return &badResult{"run_start", fmt.Sprintf("no run_id: %.200s", raw)}
	}
	a.run = &mixRun{id: st.RunID}
	a.runs = append(a.runs, a.run)
	a.stack = nil // the new run's writes start here
	a.counts["run_start"]++
	return nil
}

func (a *mixAgent) endRun(ctx context.Context) error {
	r := a.run
	a.run = nil // ended or not, no more writes go to it
	if _, err := a.call(ctx, "run_end", map[string]any{"run_id": r.id, "reason": "cycle"}); err != nil {
		return err
	}
	r.ended = true
	a.counts["run_end"]++
	return nil
}

// resolve sends the request the kill cut again, with its request_id and
// arguments: it replays (it was done), runs now (it never reached the
// ledger), or its outcome is unknown (cut inside its write): then the
// agent learns its file again and starts a new run.
func (a *mixAgent) resolve(ctx context.Context) (string, error) {
	r := a.pending
	a.pending = nil
	if r == nil {
		return "", nil
	}
	ans, err := a.send(ctx, r)
	switch errs.CodeOf(err) {
	case "":
		if ans.Replayed {
			a.ack(r, ans, ackReplayed)
			return "replayed", nil
		}
		if err := a.fresh(r, ans); err != nil {
			return "", err
		}
		a.freshAfterRestarts++
		a.ack(r, ans, ackRanNow)
		return "ran now", nil
	case errs.RequestOutcomeUnknown:
		a.unknown = append(a.unknown, r)
		raw, err := a.call(ctx, "read_file", map[string]any{"repo_id": a.repoID, "path": a.file()})
		if err != nil {
			return "", fmt.Errorf("read %s after the unknown outcome of %s: %v", a.file(), r.id, err)
		}
		var f struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(raw, &f)
		a.content, a.stack, a.run = f.Content, nil, nil
		return "unknown", nil
	default:
		return "", fmt.Errorf("%s %s, cut by the kill, sent again: %v", r.op, r.id, err)
	}
}

// replayAll sends acknowledged requests again: each must answer replayed
// with its receipt (a job: the same job).
func (a *mixAgent) replayAll(ctx context.Context, reqs []*mixReq) error {
	for _, r := range reqs {
		ans, err := a.send(ctx, r)
		if err != nil {
			return fmt.Errorf("acknowledged %s %s (%s) sent again: %v", r.op, r.id, r.how, err)
		}
		switch {
		case !ans.Replayed:
			return fmt.Errorf("acknowledged %s %s (%s) ran again (replayed: false)", r.op, r.id, r.how)
		case ans.ReceiptID != r.ans.ReceiptID || ans.JobID != r.ans.JobID:
			return fmt.Errorf("acknowledged %s %s replays receipt %q job %q, first answered %q %q", r.op, r.id, ans.ReceiptID, ans.JobID, r.ans.ReceiptID, r.ans.JobID)
		}
	}
	return nil
}

// A daemon under mixed writes of six JSON API agents — apply_patch in a
// run, revert, run_revert, git_commit, run_start/stage/observe/end,
// target_write_file/copy/move on a target a person registered, job_start
// — killed with SIGKILL at a random point of each round (4 rounds;
// HARNESSD_CRASH_MIXED_ROUNDS=N for more). After every restart: the
// request each agent had in flight replays, runs now, or is
// REQUEST_OUTCOME_UNKNOWN with nothing of it audited; every acknowledged
// request replays with its receipt (receipt_list shows it) or its job;
// each has exactly one succeeded mutation entry in the audit log (a job
// its started entries); every fencing token of a write that ran after a
// restart is above every token before it, on every key and target root;
// acknowledged runs, stages and notes are there; every acknowledged
// commit verifies; the audit chain is intact.
func TestCrashUnderMixedWrites(t *testing.T) {
	rounds := envInt(t, "HARNESSD_CRASH_MIXED_ROUNDS", 4)
	const agents = 6
	dataDir := t.TempDir()
	files := map[string]string{}
	for k := 0; k < agents; k++ {
		files[fmt.Sprintf("mix/a%02d.txt", k)] = "initial\n"
	}
	repo := testutil.Repo(t, files)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	var as []*mixAgent
	floor := map[string]uint64{}
	st := mixStats{resolved: map[string]int{}}
	for round := 0; ; round++ {
		d := startDaemon(t, dataDir, "--loop-threshold", "0")
		c := client.Unix(daemon.PathsOf(dataDir).Socket)
		if as == nil {
			as = setupMixAgents(t, c, dataDir, repo, agents, seed)
		}
		for _, a := range as {
			a.round, a.floor = round, floor
		}
		checkMixedWrites(t, c, dataDir, as, round, rng, &st)
		if round == rounds {
			c.Close()
			break
		}
		var killed atomic.Bool
		lastErr := make([]error, len(as))
		var wg sync.WaitGroup
		for i, a := range as {
			cl := client.Unix(daemon.PathsOf(dataDir).Socket)
			defer cl.Close()
			a.call = apiCaller(cl)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if err := a.step(context.Background()); err != nil {
						if !killed.Load() || errs.CodeOf(err) != errs.Unavailable {
							lastErr[i] = err
						}
						return
					}
					st.steps.Add(1)
				}
			}()
		}
		time.Sleep(time.Duration(400+rng.Intn(1200)) * time.Millisecond) // the random kill point
		killed.Store(true)
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-d.done
		wg.Wait()
		c.Close()
		for i, err := range lastErr {
			if err != nil {
				t.Errorf("round %d: agent %d, before the kill: %v", round, i, err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		// Every token issued so far is below every token after the restart.
		for _, a := range as {
			for k, tok := range a.tokens {
				floor[k] = max(floor[k], tok)
			}
		}
	}
	counts := map[string]int{}
	acked, fresh := 0, 0
	unknown := map[string]int{}
	for _, a := range as {
		for k, n := range a.counts {
			counts[k] += n
		}
		acked += len(a.acked)
		for _, r := range a.unknown {
			unknown[r.op]++
		}
		fresh += a.freshAfterRestarts
	}
	var kinds []string
	for k, n := range counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("%d rounds (%d kills), %d steps, %d writes with request ids acknowledged; acknowledged by kind: %s; in flight at the kills: %v (%d ran after the restart; unknown by kind %v); checks: %d replays, %d receipts listed, %d audit entries matched, %d commits verified, %d runs, %d jobs, %d keys fenced",
		rounds, rounds, st.steps.Load(), acked, strings.Join(kinds, ", "), st.resolved, fresh, unknown,
		st.replays, st.listed, st.audited, st.verified, st.runs, st.jobs, len(floor))
}

// mixStats counts what the test did and checked.
type mixStats struct {
	steps                                          atomic.Int64
	resolved                                       map[string]int
	replays, listed, audited, verified, runs, jobs int
}

// setupMixAgents registers the repository and, as a person (the human
// token), one write target per agent, and makes the agents.
func setupMixAgents(t *testing.T, c *client.Client, dataDir, repo string, n int, seed int64) []*mixAgent {
	t.Helper()
	ctx := context.Background()
	raw, err := c.Call(ctx, "repository_register", map[string]any{"path": repo})
	if err != nil {
		t.Fatal(err)
	}
	var r repoResult
	_ = json.Unmarshal(raw, &r)
	h := humanClient(t, dataDir)
	defer h.Close()
	var as []*mixAgent
	for k := 0; k < n; k++ {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "w.txt"), []byte("w\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		raw, err := h.Call(ctx, "target_register", map[string]any{"path": dir, "access": "write"})
		if err != nil {
			t.Fatalf("target_register by a person: %v", err)
		}
		var tg struct {
			TargetID string `json:"target_id"`
		}
		if json.Unmarshal(raw, &tg) != nil || tg.TargetID == "" {
			t.Fatalf("target_register: %s", raw)
		}
		as = append(as, &mixAgent{n: k, repoID: r.RepoID, targetID: tg.TargetID, rng: rand.New(rand.NewSource(seed + int64(k))),
			content: "initial\n", tokens: map[string]uint64{}, counts: map[string]int{}})
	}
	return as
}

// checkMixedWrites runs every check after a restart (see
// TestCrashUnderMixedWrites).
func checkMixedWrites(t *testing.T, c *client.Client, dataDir string, as []*mixAgent, round int, rng *rand.Rand, st *mixStats) {
	t.Helper()
	ctx := context.Background()
	problems := make([]error, len(as))
	outcomes := make([]string, len(as))
	var wg sync.WaitGroup
	for i, a := range as {
		a.call = apiCaller(c)
		var replays []*mixReq
		for _, r := range a.acked {
			if r.round >= round-1 || len(a.acked) <= 200 || rng.Intn(len(a.acked)) < 100 {
				replays = append(replays, r)
			}
		}
		st.replays += len(replays)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if outcomes[i], problems[i] = a.resolve(ctx); problems[i] == nil {
				problems[i] = a.replayAll(ctx, replays)
			}
		}()
	}
	wg.Wait()
	for i, err := range problems {
		if err != nil {
			t.Errorf("round %d: agent %d: %v", round, i, err)
		}
		if outcomes[i] != "" {
			st.resolved[outcomes[i]]++
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	checkMixedReceipts(t, c, as, round, st)
	checkMixedAudit(t, dataDir, as, round, st)
	checkMixedRuns(t, c, as, round, st)
	for _, a := range as {
		for _, r := range a.acked {
			switch r.op {
			case "git_commit":
				raw, err := c.Call(ctx, "commit_verify", map[string]any{"repo_id": a.repoID, "rev": r.ans.Commit})
				var v struct {
					Verified bool `json:"verified"`
				}
				if err != nil || json.Unmarshal(raw, &v) != nil || !v.Verified {
					t.Errorf("round %d: commit_verify of %s (%s, %s): %v %.600s", round, r.ans.Commit, r.id, r.how, err, raw)
				}
				st.verified++
			case "job_start":
				if _, err := c.Call(ctx, "job_status", map[string]any{"job_id": r.ans.JobID}); err != nil {
					t.Errorf("round %d: job %s of acknowledged %s: %v", round, r.ans.JobID, r.id, err)
				}
				st.jobs++
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// checkMixedReceipts: every acknowledged write's receipt is listed by
// receipt_list, unless the bound of 1,000 receipts pruned it (it is older
// than the oldest listed).
func checkMixedReceipts(t *testing.T, c *client.Client, as []*mixAgent, round int, st *mixStats) {
	t.Helper()
	type listed struct {
		ids    map[string]bool
		oldest time.Time
		full   bool
	}
	lists := map[string]*listed{}
	list := func(repoID string) *listed {
		if l := lists[repoID]; l != nil {
			return l
		}
		args := map[string]any{"limit": 1000}
		if repoID != "" {
			args["repo_id"] = repoID
		}
		raw, err := c.Call(context.Background(), "receipt_list", args)
		var out struct {
			Receipts []struct {
				ReceiptID string    `json:"receipt_id"`
				At        time.Time `json:"at"`
			} `json:"receipts"`
		}
		if err != nil || json.Unmarshal(raw, &out) != nil {
			t.Fatalf("round %d: receipt_list %v: %v", round, args, err)
		}
		l := &listed{ids: map[string]bool{}, full: len(out.Receipts) >= 1000}
		for _, r := range out.Receipts {
			l.ids[r.ReceiptID] = true
			if l.oldest.IsZero() || r.At.Before(l.oldest) {
				l.oldest = r.At
			}
		}
		lists[repoID] = l
		return l
	}
	var missing []string
	for _, a := range as {
		for _, r := range a.acked {
			if r.op == "job_start" {
				continue
			}
			// A target's receipts are listed with every repository's.
			l := list("")
			if !strings.HasPrefix(r.op, "target_") {
				l = list(a.repoID)
			}
			if l.ids[r.ans.ReceiptID] {
				st.listed++
				continue
			}
			if l.full && !r.ans.At.After(l.oldest.Add(time.Second)) {
				continue // pruned by the bound
			}
			missing = append(missing, fmt.Sprintf("%s %s (%s): %s", r.op, r.id, r.how, r.ans.ReceiptID))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Fatalf("round %d: %d acknowledged receipts not in receipt_list, e.g. %s", round, len(missing), strings.Join(missing[:min(5, len(missing))], "; "))
	}
}

// checkMixedAudit reads the whole audit log: every acknowledged write has
// exactly one succeeded mutation entry, no request id has two, a request
// whose outcome is unknown has none (else it is half recorded), an
// acknowledged job has at most one started entry per attempt; spot
// checks query by request_id; the chain verifies.
func checkMixedAudit(t *testing.T, dataDir string, as []*mixAgent, round int, st *mixStats) {
	t.Helper()
	h := humanClient(t, dataDir)
	defer h.Close()
	ctx := context.Background()
	type entry struct {
		Seq       uint64            `json:"seq"`
		Kind      string            `json:"kind"`
		RequestID string            `json:"request_id"`
		Outcome   string            `json:"outcome"`
		Details   map[string]string `json:"details"`
	}
	query := func(q url.Values) []entry {
		var all []entry
		var after uint64
		for {
			q.Set("limit", "1000")
			q.Set("after_seq", strconv.FormatUint(after, 10))
			raw, err := h.Get(ctx, "/v1/audit?"+q.Encode())
			if err != nil {
				t.Fatalf("round %d: audit query: %v", round, err)
			}
			var page struct {
				Entries []entry `json:"entries"`
				More    bool    `json:"more"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatalf("round %d: decode audit page: %v", round, err)
			}
			for _, e := range page.Entries {
				all = append(all, e)
				after = e.Seq
			}
			if !page.More || len(page.Entries) == 0 {
				return all
			}
		}
	}
	succeeded := map[string]int{}
	started := map[string]map[string]int{} // request id -> attempt -> started entries
	for _, e := range query(url.Values{}) {
		switch {
		case e.Kind == "mutation" && e.Outcome == "succeeded":
			succeeded[e.RequestID]++
		case e.Kind == "job" && e.Outcome == "started":
			if started[e.RequestID] == nil {
				started[e.RequestID] = map[string]int{}
			}
			started[e.RequestID][e.Details["attempt"]]++
		}
	}
	var bad []string
	for id, n := range succeeded {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("%s has %d succeeded entries", id, n))
		}
	}
	for id, at := range started {
		for attempt, n := range at {
			if n > 1 {
				bad = append(bad, fmt.Sprintf("job of %s started %d times in attempt %s", id, n, attempt))
			}
		}
	}
	var spot []*mixReq
	for _, a := range as {
		for _, r := range a.acked {
			if r.op == "job_start" {
				continue
			}
			if succeeded[r.id] != 1 {
				bad = append(bad, fmt.Sprintf("acknowledged %s %s (%s) has %d succeeded entries", r.op, r.id, r.how, succeeded[r.id]))
			}
			st.audited++
			if r.round == round-1 {
				spot = append(spot, r)
			}
		}
		for _, r := range a.unknown {
			if succeeded[r.id] != 0 {
				bad = append(bad, fmt.Sprintf("%s %s answers REQUEST_OUTCOME_UNKNOWN but is audited succeeded", r.op, r.id))
			}
		}
	}
	// The same by request_id, for the last round's writes.
	for _, r := range spot[:min(len(spot), 30)] {
		n := 0
		for _, e := range query(url.Values{"request_id": {r.id}, "kind": {"mutation"}}) {
			if e.Outcome == "succeeded" && e.RequestID == r.id {
				n++
			}
		}
		if n != 1 {
			bad = append(bad, fmt.Sprintf("audit by request_id %s (%s): %d succeeded entries", r.id, r.op, n))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Fatalf("round %d: %d audit problems, e.g. %s", round, len(bad), strings.Join(bad[:min(10, len(bad))], "; "))
	}
	raw, err := h.Get(ctx, "/v1/audit/verify")
	var v struct {
		OK           bool   `json:"ok"`
		Checked      int    `json:"checked"`
		BrokenReason string `json:"broken_reason"`
	}
	if err != nil || json.Unmarshal(raw, &v) != nil || !v.OK {
		t.Fatalf("round %d: audit verify: %v %s", round, err, raw)
	}
}

// checkMixedRuns: every run run_start acknowledged exists, with every
// acknowledged completed stage and note, and ended when run_end was
// acknowledged.
func checkMixedRuns(t *testing.T, c *client.Client, as []*mixAgent, round int, st *mixStats) {
	t.Helper()
	for _, a := range as {
		for _, r := range a.runs {
			raw, err := c.Call(context.Background(), "run_status", map[string]any{"run_id": r.id})
			var s struct {
				Status          string   `json:"status"`
				CompletedStages []string `json:"completed_stages"`
				Observations    []struct {
					Text string `json:"text"`
				} `json:"observations"`
			}
			if err != nil || json.Unmarshal(raw, &s) != nil {
				t.Fatalf("round %d: run_status of acknowledged run %s: %v", round, r.id, err)
			}
			st.runs++
			have := map[string]bool{}
			for _, x := range s.CompletedStages {
				have[x] = true
			}
			for _, o := range s.Observations {
				have[o.Text] = true
			}
			for _, x := range append(append([]string(nil), r.stages...), r.notes...) {
				if !have[x] {
					t.Fatalf("round %d: run %s lost the acknowledged stage or note %s (has %d stages, %d notes)", round, r.id, x, len(s.CompletedStages), len(s.Observations))
				}
			}
			if r.ended && s.Status == "active" {
				t.Fatalf("round %d: run %s: run_end was acknowledged, status %s", round, r.id, s.Status)
			}
		}
	}
}
