package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harnessd/harnessd/contract/client"
	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/surfaces/daemon"
)

// A write pays one synced commit after its file changes: the audit entry,
// the ledger's completion and the receipt in one transaction. One agent
// patches one file in a loop and the daemon is killed with SIGKILL at a
// random point (20 rounds; 5 with -short), so kills land before, inside
// and after that commit. After each restart, for every request id sent,
// the three exist together or not at all: a succeeded ledger entry has its
// succeeded audit entry and its receipt, an audit success or a receipt
// has its ledger success, and nothing is half recorded; every
// acknowledged request has all three and the audit chain verifies
// (checkAudited). A request cut before the commit answers
// REQUEST_OUTCOME_UNKNOWN, never a replay.
func TestKillAroundTheWritesCommit(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	dataDir := t.TempDir()
	repo := testutil.Repo(t, map[string]string{"a.txt": "v0\n"})
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var repoID string
	var sent []string
	acked := map[string]string{}
	cut := map[string]bool{}
	for round := 0; round <= rounds; round++ {
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
		checkAllOrNothing(t, c, dataDir, repoID, sent, acked, cut, round)
		checkAudited(t, dataDir, acked, round)
		if round == rounds {
			c.Close()
			break
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				id := fmt.Sprintf("gc-%d-%d", round, i)
				sent = append(sent, id)
				_, err := c.Call(ctx, "apply_patch", map[string]any{"repo_id": repoID, "request_id": id,
					"operations": []map[string]any{{"op": "write", "path": "a.txt", "content": id + "\n"}}})
				if err != nil {
					return // the daemon died
				}
				acked[id] = ackAnswered
			}
		}()
		time.Sleep(time.Duration(20+rng.Intn(60)) * time.Millisecond) // the random kill point
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-d.done
		<-done
		c.Close()
	}
	replayed := 0
	for _, how := range acked {
		if how == ackReplayed {
			replayed++
		}
	}
	t.Logf("%d rounds, %d requests, %d acknowledged (%d completed unanswered, replayed with their receipts), %d cut before their commit", rounds, len(sent), len(acked), replayed, len(cut))
}

// checkAllOrNothing fails unless, for every request id in sent, the
// ledger's success, the succeeded mutation audit entry and the receipt
// are all stored or none is; an acknowledged id must have all three. An
// id cut before its commit (its ledger entry left executing, so unknown
// after the restart) goes into cut, and a retry of it must answer
// REQUEST_OUTCOME_UNKNOWN.
func checkAllOrNothing(t *testing.T, c *client.Client, dataDir, repoID string, sent []string, acked map[string]string, cut map[string]bool, round int) {
	t.Helper()
	h := humanClient(t, dataDir)
	defer h.Close()
	ledger := map[string]string{}
	for _, r := range dumpRecords(t, h, "ledger/") {
		ledger[r.RequestID] = r.State
	}
	audited := map[string]bool{}
	for _, r := range dumpRecords(t, h, "audit/") {
		if r.Kind == "mutation" && r.Outcome == "succeeded" {
			audited[r.RequestID] = true
		}
	}
	receipts := map[string]bool{}
	for _, r := range dumpRecords(t, h, "receipt/") {
		receipts[r.RequestID] = true
	}
	var half []string
	for _, id := range sent {
		ok, a, rc := ledger[id] == "succeeded", audited[id], receipts[id]
		switch {
		case ok && a && rc:
			if acked[id] == "" { // completed before the kill but never answered
				checkReplayHasReceipt(t, c, repoID, id, round)
				acked[id] = ackReplayed
			}
		case !ok && !a && !rc:
			if acked[id] != "" {
				t.Errorf("round %d: %s was acknowledged but nothing of it is stored (ledger %q)", round, id, ledger[id])
				continue
			}
			if ledger[id] != "unknown" {
				continue // never began (killed before its ledger entry), or failed
			}
			cut[id] = true
			_, err := c.Call(context.Background(), "apply_patch", map[string]any{"repo_id": repoID, "request_id": id,
				"operations": []map[string]any{{"op": "write", "path": "a.txt", "content": id + "\n"}}})
			if errs.CodeOf(err) != errs.RequestOutcomeUnknown {
				t.Errorf("round %d: retry of %s (ledger %q): %v, want REQUEST_OUTCOME_UNKNOWN", round, id, ledger[id], err)
			}
		default:
			half = append(half, fmt.Sprintf("%s (ledger %q, audited %v, receipt %v)", id, ledger[id], a, rc))
		}
	}
	sort.Strings(half)
	if len(half) > 0 {
		t.Fatalf("round %d: %d requests are half recorded, e.g. %s", round, len(half), strings.Join(half[:min(len(half), 5)], "; "))
	}
}

// checkReplayHasReceipt retries request id, completed before a kill but
// never answered: it must replay with a receipt_id that receipt_list
// shows and revert finds (applied, or REVERT_CONFLICT over later writes;
// never NOT_FOUND).
func checkReplayHasReceipt(t *testing.T, c *client.Client, repoID, id string, round int) {
	t.Helper()
	ctx := context.Background()
	raw, err := c.Call(ctx, "apply_patch", map[string]any{"repo_id": repoID, "request_id": id,
		"operations": []map[string]any{{"op": "write", "path": "a.txt", "content": id + "\n"}}})
	var res struct {
		Replayed  bool   `json:"replayed"`
		ReceiptID string `json:"receipt_id"`
	}
	if err != nil || json.Unmarshal(raw, &res) != nil || !res.Replayed || res.ReceiptID == "" {
		t.Fatalf("round %d: retry of %s, completed but never answered: %s, %v; want a replay with its receipt", round, id, raw, err)
	}
	raw, err = c.Call(ctx, "receipt_list", map[string]any{"repo_id": repoID, "limit": 1000})
	var list struct {
		Receipts []struct {
			ReceiptID string `json:"receipt_id"`
		} `json:"receipts"`
	}
	if err != nil || json.Unmarshal(raw, &list) != nil {
		t.Fatalf("round %d: receipt_list: %v", round, err)
	}
	listed := false
	for _, r := range list.Receipts {
		listed = listed || r.ReceiptID == res.ReceiptID
	}
	if !listed {
		t.Fatalf("round %d: the replay of %s cites %s, which receipt_list does not show", round, id, res.ReceiptID)
	}
	_, err = c.Call(ctx, "revert", map[string]any{"repo_id": repoID, "receipt_id": res.ReceiptID, "request_id": "rv-" + id})
	if code := errs.CodeOf(err); err != nil && code != errs.RevertConflict {
		t.Fatalf("round %d: revert of %s (replayed for %s): %v; want it applied or REVERT_CONFLICT", round, res.ReceiptID, id, err)
	}
}

// storeRecord is what checkAllOrNothing reads of a stored value.
type storeRecord struct{ RequestID, State, Kind, Outcome string }

// dumpRecords reads every record under prefix through the store dump. The
// dump is redacted (not always JSON any more), so the fields are found by
// pattern: the first of each, which is the record's own.
func dumpRecords(t *testing.T, h *client.Client, prefix string) []storeRecord {
	t.Helper()
	raw, err := h.GetRaw(context.Background(), "/v1/store/dump?prefix="+prefix)
	if err != nil {
		t.Fatalf("store dump %s: %v", prefix, err)
	}
	field := func(line, name string) string {
		m := regexp.MustCompile(`"` + name + `":"([^"]*)"`).FindStringSubmatch(line)
		if m == nil {
			return ""
		}
		return m[1]
	}
	var out []storeRecord
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		_, v, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		r := storeRecord{RequestID: field(v, "request_id"), State: field(v, "state"), Kind: field(v, "kind"), Outcome: field(v, "outcome")}
		if r.RequestID == "" {
			continue // an entry of no request (a registration's audit, say)
		}
		out = append(out, r)
	}
	return out
}
