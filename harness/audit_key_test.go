package harness_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/harnessd/harnessd/actors"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/internal/testutil"
	"github.com/harnessd/harnessd/messages"
	"github.com/harnessd/harnessd/persistence"
	httpapi "github.com/harnessd/harnessd/surfaces/http"
)

// lockedBuffer is a log sink safe for the actors' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Sync() error { return nil }

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func openAt(t *testing.T, dir string, lg *zap.Logger) *harness.Harness {
	t.Helper()
	h, err := harness.Open(context.Background(), harness.Config{DataDir: dir, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func closeH(t *testing.T, h *harness.Harness) {
	t.Helper()
	if err := h.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func keyBytes(t *testing.T, path string) []byte {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != audit.KeySize {
		t.Fatalf("%s: mode %v, %d bytes; want 0600 and %d bytes", path, fi.Mode().Perm(), fi.Size(), audit.KeySize)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// keyShown reports whether any usual encoding of a key appears in text.
func keyShown(text string, keys ...[]byte) bool {
	for _, k := range keys {
		for _, form := range []string{string(k), hex.EncodeToString(k), strings.ToUpper(hex.EncodeToString(k)),
			base64.StdEncoding.EncodeToString(k), base64.RawStdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k)} {
			if strings.Contains(text, form) {
				return true
			}
		}
	}
	return false
}

func assertNoKey(t *testing.T, where, text string, keys ...[]byte) {
	t.Helper()
	if keyShown(text, keys...) {
		t.Errorf("%s shows an audit key", where)
	}
}

// TestAuditKeyNeverLeaves rotates the key, anchors (file and git note) and
// verifies, then looks for the key bytes where an attacker could read
// them: the logs, the store dump and every API answer.
func TestAuditKeyNeverLeaves(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	logs := &lockedBuffer{}
	lg := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), logs, zap.DebugLevel))
	h := openAt(t, dir, lg)
	k1 := keyBytes(t, filepath.Join(dir, harness.AuditKeyFile))
	id1 := audit.KeyID(k1)

	root := testutil.Repo(t, map[string]string{"a.txt": "a\n"})
	repo, err := h.RegisterRepository(ctx, harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ReloadPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	var answers []any
	rot, err := h.AuditRotateKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, rot)
	k2 := keyBytes(t, filepath.Join(dir, harness.AuditKeyFile))
	if rot.OldKeyID != id1 || rot.KeyID != audit.KeyID(k2) || bytes.Equal(k1, k2) {
		t.Fatalf("rotate = %+v, want %s -> the new key file's id", rot, id1)
	}
	if kept := keyBytes(t, filepath.Join(dir, harness.AuditKeyFile+"."+id1)); !bytes.Equal(kept, k1) {
		t.Fatal("the old key was not kept as audit.key.<old id>")
	}
	if _, err := h.ReloadPolicy(ctx); err != nil { // an entry under the new key
		t.Fatal(err)
	}
	anc, err := h.AuditAnchorHead(ctx, harness.AuditAnchorArgs{GitNoteRepo: repo.ID})
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, anc)
	if anc.Anchor.Seq != rot.Seq+1 || anc.Anchor.KeyID != rot.KeyID || anc.GitNote == "" {
		t.Fatalf("anchor = %+v, want the entry after the rotation, sealed by %s, noted", anc, rot.KeyID)
	}
	note, err := exec.Command("git", "-C", root, "notes", "--ref=harnessd-audit", "show", "HEAD").Output()
	if err != nil {
		t.Fatalf("git notes show: %v", err)
	}
	got, err := harness.ParseAuditAnchor(string(note))
	if err != nil || got.Seq != anc.Anchor.Seq || got.Hash != anc.Anchor.Hash {
		t.Fatalf("git note = %q (%v), want the anchor %+v", note, err, anc.Anchor)
	}
	v, err := h.AuditVerifyAnchored(ctx, &got)
	if err != nil || !v.OK || !v.Anchored || v.KeyID != rot.KeyID || v.Unkeyed != 0 {
		t.Fatalf("verify = %+v, %v; want intact, anchored, keyed by %s", v, err, rot.KeyID)
	}
	answers = append(answers, v)
	list, err := h.Audit(ctx, harness.AuditArgs{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	answers = append(answers, list)
	var rotation *messages.AuditEntry
	for i, e := range list.Entries {
		if e.Kind == audit.KindKeyRotation {
			rotation = &list.Entries[i]
		}
	}
	if rotation == nil || rotation.Details[audit.DetailOldKeyID] != id1 || rotation.KeyID != rot.KeyID {
		t.Fatalf("rotation entry = %+v, want one from %s sealed by %s", rotation, id1, rot.KeyID)
	}
	var dump bytes.Buffer
	if _, err := h.DumpStore(ctx, "", &dump); err != nil {
		t.Fatal(err)
	}
	closeH(t, h)

	if !keyShown("x"+base64.StdEncoding.EncodeToString(k2)+"y", k2) { // the check can fail
		t.Fatal("keyShown misses a base64 key")
	}
	js, _ := json.Marshal(answers)
	assertNoKey(t, "an API answer", string(js), k1, k2)
	assertNoKey(t, "the store dump", dump.String(), k1, k2)
	assertNoKey(t, "the logs", logs.String(), k1, k2)
	if !strings.Contains(logs.String(), rot.KeyID) {
		t.Error("the logs do not name the key id (is the log sink wired?)")
	}

	// After a restart the old key still proves the entries it sealed.
	h = openAt(t, dir, nil)
	v, err = h.AuditVerifyAnchored(ctx, &got)
	closeH(t, h)
	if err != nil || !v.OK || !v.Anchored {
		t.Fatalf("verify after restart = %+v, %v; want intact", v, err)
	}
}

func TestAuditVerifyWithoutTheKey(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		damage func(t *testing.T, dir, oldID string)
		reason string
	}{
		{"old key file removed", func(t *testing.T, dir, oldID string) {
			if err := os.Remove(filepath.Join(dir, harness.AuditKeyFile+"."+oldID)); err != nil {
				t.Fatal(err)
			}
		}, "not in the keyring"},
		{"key file replaced", func(t *testing.T, dir, oldID string) {
			if err := os.Remove(filepath.Join(dir, harness.AuditKeyFile+"."+oldID)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, harness.AuditKeyFile), bytes.Repeat([]byte{7}, audit.KeySize), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not in the keyring"},
		{"key file deleted (a new one is made)", func(t *testing.T, dir, oldID string) {
			for _, f := range []string{harness.AuditKeyFile, harness.AuditKeyFile + "." + oldID} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		}, "not in the keyring"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			h := openAt(t, dir, nil)
			old := audit.KeyID(keyBytes(t, filepath.Join(dir, harness.AuditKeyFile)))
			if _, err := h.AuditRotateKey(ctx); err != nil {
				t.Fatal(err)
			}
			closeH(t, h)
			tt.damage(t, dir, old)
			h = openAt(t, dir, nil)
			v, err := h.AuditVerify(ctx)
			closeH(t, h)
			if err != nil || v.OK || v.BrokenSeq != 1 || !strings.Contains(v.BrokenReason, tt.reason) {
				t.Fatalf("verify = %+v, %v; want broken at 1: %q", v, err, tt.reason)
			}
		})
	}
}

// TestAuditKeyUpgradeKeepsOldEntries: a store written before keys (plain
// sha256 entries) is keyed from the entry after its last one; the old
// entries still verify by their hash and are counted as unkeyed.
func TestAuditKeyUpgradeKeepsOldEntries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := persistence.Open(persistence.Options{Dir: harness.StoreDir(dir), MarksPath: harness.MarksPath(dir)})
	if err != nil {
		t.Fatal(err)
	}
	var prev audit.Entry
	err = st.Update(true, func(tx *persistence.Txn) error {
		for i := range 3 {
			e, err := audit.Prepare(audit.Entry{Kind: audit.KindJob, Reason: "old " + string(rune('a'+i))}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			if err != nil {
				return err
			}
			prev = audit.Seal(prev, e)
			if err := tx.Put(persistence.AuditKey(prev.Seq), messages.AuditEntry(prev)); err != nil {
				return err
			}
		}
		return tx.Put(actors.AuditHeadKey, audit.HeadOf(prev))
	})
	if err2 := st.Close(); err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
	h := openAt(t, dir, nil)
	if _, err := h.ReloadPolicy(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := h.AuditVerify(ctx)
	closeH(t, h)
	if err != nil || !v.OK || v.Unkeyed != 3 || v.Checked < 4 {
		t.Fatalf("verify = %+v, %v; want intact with the 3 old entries unkeyed", v, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "audit.keyed-from")); err != nil || strings.TrimSpace(string(b)) != "4" {
		t.Fatalf("keyed-from = %q, %v; want 4", b, err)
	}
}

// The audit endpoints are people's: without the human token they refuse,
// with it they answer ids and hashes, never key bytes.
func TestAuditEndpointsNeedTheHumanToken(t *testing.T) {
	const token = "human-token-for-audit-tests"
	dir := t.TempDir()
	h := openAt(t, dir, nil)
	defer closeH(t, h)
	srv := httptest.NewServer(httpapi.Handler(h, httpapi.Options{HumanToken: token}))
	defer srv.Close()
	call := func(method, path, tok string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	k1 := keyBytes(t, filepath.Join(dir, harness.AuditKeyFile))
	for _, tok := range []string{"", "wrong"} {
		if code, body := call("POST", "/v1/audit/rotate-key", tok); code != http.StatusUnauthorized {
			t.Fatalf("rotate-key with token %q = %d %s, want 401", tok, code, body)
		}
	}
	if b := keyBytes(t, filepath.Join(dir, harness.AuditKeyFile)); !bytes.Equal(b, k1) {
		t.Fatal("a refused rotate-key changed the key")
	}
	var bodies []string
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/audit/rotate-key"}, {"POST", "/v1/audit/anchor"}, {"GET", "/v1/audit/verify"}, {"GET", "/v1/audit?limit=100"},
	} {
		code, body := call(c.method, c.path, token)
		if code != http.StatusOK {
			t.Fatalf("%s %s = %d %s", c.method, c.path, code, body)
		}
		bodies = append(bodies, body)
	}
	var a harness.AuditAnchorResult
	if err := json.Unmarshal([]byte(bodies[1]), &a); err != nil || a.Anchor.Seq == 0 {
		t.Fatalf("anchor = %s (%v)", bodies[1], err)
	}
	code, body := call("GET", "/v1/audit/verify?anchor="+url.QueryEscape(`{"seq":`+strconv.FormatUint(a.Anchor.Seq, 10)+`,"hash":"hmac-sha256:00"}`), token)
	if code != http.StatusOK || !strings.Contains(body, "does not match the anchor") {
		t.Fatalf("verify with a wrong anchor = %d %s, want the break", code, body)
	}
	k2 := keyBytes(t, filepath.Join(dir, harness.AuditKeyFile))
	assertNoKey(t, "an HTTP answer", strings.Join(bodies, "\n"), k1, k2)
}

// A confined job cannot read the audit key: the data dir is hidden from
// every process harnessd starts.
func TestAuditKeyHiddenFromJobs(t *testing.T) {
	dir := t.TempDir()
	h := openAt(t, dir, nil)
	defer closeH(t, h)
	keyPath := filepath.Join(dir, harness.AuditKeyFile)
	key := keyBytes(t, keyPath)
	// The attacker's script names the key inside a file of the checkout,
	// where the argv checks do not look.
	script := "echo job-ran\nk=" + keyPath + "\nod -An -tx1 \"$k\" | tr -d ' \\n'\nbase64 \"$k\"\ncat \"$k\"\n"
	root := testutil.Repo(t, map[string]string{"a.txt": "a\n", "probe.sh": script})
	repo, err := h.RegisterRepository(context.Background(), harness.RegisterArgs{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	r := startJob(t, h, harness.JobStartArgs{RepoID: repo.ID, Argv: []string{"sh", "probe.sh"}})
	waitJob(t, h, r.JobID)
	out := logs(t, h, r.JobID, "stdout") + logs(t, h, r.JobID, "stderr")
	if !strings.Contains(out, "job-ran") {
		t.Fatalf("the job did not run: %q", out)
	}
	assertNoKey(t, "a confined job's output", out, key)
}
