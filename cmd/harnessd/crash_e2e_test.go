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
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness/client"
	"github.com/harnessd/harnessd/harness/errs"
	"github.com/harnessd/harnessd/internal/daemon"
	"github.com/harnessd/harnessd/internal/testutil"
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
// REQUEST_OUTCOME_UNKNOWN, and the next fencing token is above any issued.
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
		u, r := checkAfterRestart(t, c, repo, files, sent, maxToken, repoID, round)
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
	u, r := checkAfterRestart(t, c, repo, files, sent, maxToken, repoID, rounds)
	t.Logf("%d rounds, %d requests: %d replay answers, %d unknown-outcome answers (last check: %d, %d)",
		rounds, len(sent), totalReplayed+r, totalUnknown+u, r, u)
}

func checkAfterRestart(t *testing.T, c *client.Client, repo string, files int, sent map[string]json.RawMessage, maxToken map[string]uint64, repoID string, round int) (unknown, replayed int) {
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
				replayed++
				continue
			}
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
	raw, err := c.Call(ctx, "apply_patch", map[string]any{"repo_id": repoID, "request_id": fmt.Sprintf("probe-%d", round),
		"operations": []map[string]any{{"op": "write", "path": "f0.txt", "content": content(9999, 0)}}})
	if err != nil {
		t.Fatalf("round %d: probe: %v", round, err)
	}
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
