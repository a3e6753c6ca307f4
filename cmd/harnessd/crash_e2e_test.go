package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
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

// content is the body request round r writes to file f: one token repeated,
// so a torn file (parts of two writes) is detectable.
func content(r, f int) string { return strings.Repeat(fmt.Sprintf("r%03d-f%d|", r, f), 3000) }

func wholeToken(s string) bool {
	if s == "" {
		return true
	}
	i := strings.IndexByte(s, '|')
	if i < 0 {
		return false
	}
	tok := s[:i+1]
	return strings.Count(s, tok)*len(tok) == len(s)
}

// A daemon killed with SIGKILL at random points during patches, 50 rounds:
// after each restart every file is wholly old or wholly new, the ledger
// answers every request id with its stored result or
// REQUEST_OUTCOME_UNKNOWN, the next fencing token is above any issued, and
// every request acknowledged as succeeded (an OK answer, or a replay of
// one) has its succeeded mutation entry in an intact audit log.
func TestCrashDuringPatches(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	dataDir := t.TempDir()
	const files = 4
	init := map[string]string{}
	for f := 0; f < files; f++ {
		init[fmt.Sprintf("f%d.txt", f)] = ""
	}
	repo := testutil.Repo(t, init)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	maxToken := map[string]uint64{} // resource key -> highest fencing token seen
	var repoID string
	sent := map[string]json.RawMessage{} // request id -> arguments
	acked := map[string]string{}         // request ids acknowledged as succeeded -> how
	totalUnknown, totalReplayed := 0, 0

	for round := 0; round < rounds; round++ {
		d := startDaemon(t, dataDir)
		c := client.Unix(daemon.PathsOf(dataDir).Socket)
		ctx := context.Background()
		if repoID == "" {
			raw, err := c.Call(ctx, "repository_register", map[string]any{"path": repo})
			if err != nil {
				t.Fatal(err)
			}
			var r repoResult
			_ = json.Unmarshal(raw, &r)
			repoID = r.RepoID
		}
		u, r := checkAfterRestart(t, c, repo, files, sent, acked, maxToken, repoID, round)
		checkAudited(t, dataDir, acked, round)
		totalUnknown, totalReplayed = totalUnknown+u, totalReplayed+r

		// Fire patches from two writers and kill the daemon at a random moment.
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					id := fmt.Sprintf("round%d-w%d-%d", round, w, i)
					var ops []map[string]any
					for f := w; f < files; f += 2 {
						ops = append(ops, map[string]any{"op": "write", "path": fmt.Sprintf("f%d.txt", f), "content": content(round*100+i, f)})
					}
					args, _ := json.Marshal(map[string]any{"repo_id": repoID, "request_id": id, "operations": ops})
					mu.Lock()
					sent[id] = args
					mu.Unlock()
					raw, err := c.Call(ctx, "apply_patch", json.RawMessage(args))
					if err != nil {
						return // the daemon died
					}
					var res struct {
						FencingTokens map[string]uint64 `json:"fencing_tokens"`
					}
					_ = json.Unmarshal(raw, &res)
					mu.Lock()
					acked[id] = ackAnswered
					for k, tok := range res.FencingTokens {
						if tok > maxToken[k] {
							maxToken[k] = tok
						}
					}
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(time.Duration(5+rng.Intn(40)) * time.Millisecond) // the random kill point
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-d.done
		wg.Wait()
		c.Close()
	}
	d := startDaemon(t, dataDir)
	_ = d
	c := client.Unix(daemon.PathsOf(dataDir).Socket)
	defer c.Close()
	u, r := checkAfterRestart(t, c, repo, files, sent, acked, maxToken, repoID, rounds)
	checkAudited(t, dataDir, acked, rounds)
	t.Logf("%d rounds, %d requests, %d acknowledged and audited: %d replay answers, %d unknown-outcome answers (last check: %d, %d)",
		rounds, len(sent), len(acked), totalReplayed+r, totalUnknown+u, r, u)
}

func checkAfterRestart(t *testing.T, c *client.Client, repo string, files int, sent map[string]json.RawMessage, acked map[string]string, maxToken map[string]uint64, repoID string, round int) (unknown, replayed int) {
	t.Helper()
	ctx := context.Background()
	for f := 0; f < files; f++ {
		b, err := os.ReadFile(filepath.Join(repo, fmt.Sprintf("f%d.txt", f)))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !wholeToken(string(b)) {
			t.Fatalf("round %d: f%d.txt is torn (%d bytes)", round, f, len(b))
		}
	}
	// Every request id answers with its stored result, an unknown outcome,
	// or (if it never reached the ledger) runs now; never "in progress".
	for id, args := range sent {
		raw, err := c.Call(ctx, "apply_patch", args)
		switch errs.CodeOf(err) {
		case "":
			var res struct {
				Replayed      bool              `json:"replayed"`
				FencingTokens map[string]uint64 `json:"fencing_tokens"`
			}
			_ = json.Unmarshal(raw, &res)
			if res.Replayed {
				if acked[id] == "" {
					acked[id] = ackReplayed
				}
				replayed++
				continue
			}
			acked[id] = ackRanNow
			for k, tok := range res.FencingTokens {
				if tok <= maxToken[k] {
					t.Fatalf("round %d: %s ran now with token %d for %s, not above %d", round, id, tok, k, maxToken[k])
				}
				maxToken[k] = tok
			}
		case errs.RequestOutcomeUnknown:
			unknown++
			if d, _ := errs.From(err).Details["digests"].(map[string]any); len(d) == 0 {
				t.Fatalf("round %d: unknown outcome of %s without digests: %v", round, id, err)
			}
		default:
			t.Fatalf("round %d: request %s: %v", round, id, err)
		}
	}
	// A fresh write gets a token above every token issued before.
	probe := fmt.Sprintf("probe-%d", round)
	raw, err := c.Call(ctx, "apply_patch", map[string]any{"repo_id": repoID, "request_id": probe,
		"operations": []map[string]any{{"op": "write", "path": "f0.txt", "content": content(9999, 0)}}})
	if err != nil {
		t.Fatalf("round %d: probe: %v", round, err)
	}
	acked[probe] = ackAnswered
	var res struct {
		FencingTokens map[string]uint64 `json:"fencing_tokens"`
	}
	_ = json.Unmarshal(raw, &res)
	for k, tok := range res.FencingTokens {
		if tok <= maxToken[k] {
			t.Fatalf("round %d: token %d of %s after restart, want above %d", round, tok, k, maxToken[k])
		}
		maxToken[k] = tok
	}
	return unknown, replayed
}

// Sixteen JSON API clients doing mixed load (read_file, search,
// git_status, git_diff, run_command `ls`, apply_patch with unique request
// ids and replays of acknowledged ones), the daemon killed with SIGKILL at
// a random point of each round (5 rounds; HARNESSD_CRASH_ROUNDS=N for
// more). Until the kill every answer is right; after each restart the
// daemon is ready (health, git_status and run_command) within
// mixedRestartBudget, no file is torn, every acknowledged patch is there
// and replays as replayed without writing, the patch in flight at the kill
// is wholly there or wholly not, fencing tokens only rise, and every
// acknowledged mutation is audited in an intact log.
func TestCrashUnderMixedLoad(t *testing.T) {
	rounds := envInt(t, "HARNESSD_CRASH_ROUNDS", 5)
	const agents = 16
	dataDir := t.TempDir()
	repo := testutil.Repo(t, loadRepoFiles(agents))
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	var (
		repoID  string
		as      []*loadAgent
		slowest time.Duration
		kills   int
	)
	for round := 0; ; round++ {
		start := time.Now()
		d := startDaemon(t, dataDir, "--loop-threshold", "0")
		c := client.Unix(daemon.PathsOf(dataDir).Socket)
		if repoID == "" {
			raw, err := c.Call(context.Background(), "repository_register", map[string]any{"path": repo})
			if err != nil {
				t.Fatal(err)
			}
			var r repoResult
			_ = json.Unmarshal(raw, &r)
			repoID = r.RepoID
			for k := 0; k < agents; k++ {
				as = append(as, newLoadAgent(k, repoID, fmt.Sprintf("mix-c%02d", k), 300, seed+int64(k)))
			}
		}
		ready := readyAfter(t, c, repoID, start, round)
		if round > 0 {
			slowest = max(slowest, ready)
			if ready > mixedRestartBudget {
				t.Errorf("round %d: ready %s after the restart, want within %s", round, ready.Round(time.Millisecond), mixedRestartBudget)
			}
		}
		checkMixedAfterRestart(t, c, repo, dataDir, as, round, rng)
		if round == rounds {
			c.Close()
			break
		}

		// Load until a random kill point.
		var killed atomic.Bool
		lastErr := make([]error, len(as))
		var wg sync.WaitGroup
		for i, a := range as {
			cl := client.Unix(daemon.PathsOf(dataDir).Socket)
			defer cl.Close()
			a.call, a.round = apiCaller(cl), round
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if _, err := a.step(context.Background()); err != nil {
						if !killed.Load() || errs.CodeOf(err) != errs.Unavailable {
							lastErr[i] = err
						}
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(300+rng.Intn(1200)) * time.Millisecond) // the random kill point
		killed.Store(true)
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-d.done
		wg.Wait()
		kills++
		c.Close()
		for i, err := range lastErr {
			if err != nil {
				t.Errorf("round %d: agent %d, before the kill: %v", round, i, err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	total := newLoadStats()
	patches := 0
	for _, a := range as {
		total.merge(a.stats)
		patches += len(a.acked)
	}
	ok, failed := total.ops()
	t.Logf("%d kills, %d calls ok, %d cut by the kills, %d patches acknowledged, slowest restart %s\n%s",
		kills, ok, failed, patches, slowest.Round(time.Millisecond), total.table())
}

// mixedRestartBudget bounds the time from starting the daemon on a data
// dir a kill -9 left behind until it answers health, git_status and
// run_command (the race detector is on the test, not on the daemon).
const mixedRestartBudget = 5 * time.Second

// readyAfter polls until git_status and run_command answer (a command
// may be UNAVAILABLE while the checkout's secrets are first learned) and
// returns the time since start.
func readyAfter(t *testing.T, c *client.Client, repoID string, start time.Time, round int) time.Duration {
	t.Helper()
	deadline := start.Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Call(ctx, "git_status", map[string]any{"repo_id": repoID})
		if err == nil {
			_, err = c.Call(ctx, "run_command", map[string]any{"repo_id": repoID, "argv": []string{"ls"}})
		}
		cancel()
		if err == nil {
			return time.Since(start)
		}
		if errs.CodeOf(err) != errs.Unavailable {
			t.Fatalf("round %d: after the restart: %v", round, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: not ready 30s after the restart: %v", round, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a subprocess
	}
}

// checkMixedAfterRestart checks every agent's file and requests after a
// restart, resolves the patch each had in flight, and checks the audit
// log against every acknowledged patch.
func checkMixedAfterRestart(t *testing.T, c *client.Client, repo, dataDir string, as []*loadAgent, round int, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	problems := make([]error, len(as))
	var wg sync.WaitGroup
	for i, a := range as {
		replays := a.acked
		if len(replays) > 300 { // many rounds: the last round's and a sample of the rest
			replays = nil
			for j, id := range a.acked {
				if a.ackedRound[j] == round-1 || rng.Intn(len(a.acked)) < 100 {
					replays = append(replays, id)
				}
			}
		}
		a.call = apiCaller(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			problems[i] = a.afterRestart(ctx, repo, replays)
		}()
	}
	wg.Wait()
	for i, err := range problems {
		if err != nil {
			t.Errorf("round %d: agent %d: %v", round, i, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	acked := map[string]string{}
	for _, a := range as {
		for i, id := range a.acked {
			acked[id] = a.ackedHow[i]
		}
	}
	checkAudited(t, dataDir, acked, round)
}

// afterRestart checks the agent's file on disk is whole and is its last
// acknowledged patch (or the one in flight at the kill), resolves that
// one by sending it again (replayed: it was done; ran now: it had not
// reached the ledger; REQUEST_OUTCOME_UNKNOWN: the disk says), and replays
// replays, which must answer replayed and leave the file as it is.
func (a *loadAgent) afterRestart(ctx context.Context, repo string, replays []string) error {
	disk := func() (string, error) {
		b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(a.path())))
		if err != nil {
			return "", err
		}
		if !wholeToken(string(b)) {
			return "", fmt.Errorf("%s is torn (%d bytes)", a.path(), len(b))
		}
		return string(b), nil
	}
	got, err := disk()
	if err != nil {
		return err
	}
	if a.pending != "" {
		id := a.pending
		a.pending = ""
		if want := a.patchContent(id); got != a.last && got != want {
			return fmt.Errorf("%s holds %.30q, neither %s (acknowledged) nor %s (in flight)", a.path(), got, a.lastID, id)
		}
		raw, err := a.call(ctx, "apply_patch", a.patchArgs(id))
		switch errs.CodeOf(err) {
		case "":
			res, err := decodePatch(raw)
			if err != nil {
				return err
			}
			if !res.Replayed {
				if got != a.last {
					return fmt.Errorf("%s ran now, but the file already held its content", id)
				}
				if err := a.fenced(id, res.FencingTokens); err != nil {
					return err
				}
			}
			how := ackReplayed
			if !res.Replayed {
				how = ackRanNow
			}
			a.ack(id, how)
		case errs.RequestOutcomeUnknown:
			if got == a.patchContent(id) {
				a.last, a.lastID = got, id
			}
		default:
			return fmt.Errorf("in-flight %s sent again: %v", id, err)
		}
		if got, err = disk(); err != nil {
			return err
		}
	}
	if got != a.last {
		return fmt.Errorf("%s holds %.30q, want the content of %s, its last acknowledged patch", a.path(), got, a.lastID)
	}
	for _, id := range replays {
		raw, err := a.call(ctx, "apply_patch", a.patchArgs(id))
		if err != nil {
			return fmt.Errorf("acknowledged %s sent again: %v", id, err)
		}
		res, err := decodePatch(raw)
		if err != nil {
			return err
		}
		if !res.Replayed {
			return fmt.Errorf("acknowledged %s ran again (replayed: false)", id)
		}
	}
	if got, err = disk(); err != nil {
		return err
	}
	if got != a.last {
		return fmt.Errorf("after %d replays %s holds %.30q, want the content of %s", len(replays), a.path(), got, a.lastID)
	}
	return nil
}
