package harness

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/audit"
	"github.com/harnessd/harnessd/messages"
)

// AuditKeyFile is the current audit key in the data dir (see
// internal/audit.KeyFile).
const AuditKeyFile = audit.KeyFile

// AuditRotateResult reports a key rotation.
type AuditRotateResult struct {
	KeyID    string `json:"key_id"`
	OldKeyID string `json:"old_key_id"`
	// Seq and Hash are the key_rotation entry's.
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// AuditRotateKey makes a new audit key (the old one is kept as
// <data-dir>/audit.key.<old id>, so the entries it sealed still verify) and
// appends a key_rotation entry sealed with it whose details carry the old
// key id and the previous head's HMAC under the old key. For people (CLI,
// HTTP), never an MCP tool.
func (h *Harness) AuditRotateKey(ctx context.Context) (*AuditRotateResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	h.akeys.Lock()
	defer h.akeys.Unlock()
	old, next, err := h.akeys.Rotate()
	if err != nil {
		return nil, err
	}
	r, err := h.rt.Audit.RotateKey(ctx, old.ID)
	if err != nil {
		// The key files are rotated: the actor hands over at its next
		// entry, so the chain stays verifiable.
		return nil, err
	}
	h.lg.Info("audit key rotated", zap.String("key_id", next.ID), zap.String("old_key_id", old.ID), zap.Uint64("seq", r.Seq))
	return &AuditRotateResult{KeyID: next.ID, OldKeyID: old.ID, Seq: r.Seq, Hash: r.Hash}, nil
}

// AuditAnchor is the audit head to record outside the store. Printed as one
// JSON line, kept in a file, a git note or a ticket, it lets `audit verify
// --anchor` catch a chain rewritten or truncated below it, even by someone
// who holds the key.
type AuditAnchor struct {
	Seq   uint64    `json:"seq"`
	Hash  string    `json:"hash"`
	KeyID string    `json:"key_id,omitempty"`
	At    time.Time `json:"at"`
}

// AuditAnchorArgs say where else harnessd writes the anchor.
type AuditAnchorArgs struct {
	// GitNoteRepo, if set, is a registered repository: the anchor is added
	// as a git note (ref refs/notes/harnessd-audit) to its HEAD commit.
	GitNoteRepo string `json:"git_note_repo_id,omitempty"`
}

// AuditAnchorResult is an anchor and where it was written.
type AuditAnchorResult struct {
	Anchor AuditAnchor `json:"anchor"`
	// GitNote names the commit the note was added to, if one was.
	GitNote string `json:"git_note_commit,omitempty"`
}

// auditNotesRef is the notes ref of anchors.
const auditNotesRef = "harnessd-audit"

// AuditAnchorHead flushes the audit log and returns its head as an anchor,
// also written as a git note when a.GitNoteRepo is set.
func (h *Harness) AuditAnchorHead(ctx context.Context, a AuditAnchorArgs) (*AuditAnchorResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	hd, err := h.rt.Audit.Head(ctx)
	if err != nil {
		return nil, err
	}
	out := &AuditAnchorResult{Anchor: AuditAnchor{Seq: hd.Seq, Hash: hd.Hash, KeyID: hd.KeyID, At: h.cfg.Now().UTC().Truncate(time.Second)}}
	if a.GitNoteRepo == "" {
		return out, nil
	}
	e, ok := h.rt.Registry.Lookup(a.GitNoteRepo)
	if !ok {
		return nil, errs.New(errs.NotFound, "repository %q is not registered: see `harness repos`", a.GitNoteRepo).With("repo_id", a.GitNoteRepo)
	}
	line, err := json.Marshal(out.Anchor)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "encode the anchor: %v", err)
	}
	root := e.Repo.Root
	rev, _, err := h.env.Git.Run(ctx, root, 4096, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, err
	}
	if _, _, err := h.env.Git.Run(ctx, root, 4096, "notes", "--ref="+auditNotesRef, "add", "-f", "-m", string(line), "HEAD"); err != nil {
		return nil, err
	}
	out.GitNote = strings.TrimSpace(string(rev))
	return out, nil
}

// ParseAuditAnchor reads an anchor: one JSON object, or the last non-empty
// line of several (a file anchors were appended to).
func ParseAuditAnchor(s string) (AuditAnchor, error) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	var a AuditAnchor
	if err := json.Unmarshal([]byte(last), &a); err != nil {
		return AuditAnchor{}, errs.New(errs.InvalidArgument, "anchor: want the JSON line `harness audit anchor` prints: %v", err)
	}
	if a.Seq == 0 || a.Hash == "" {
		return AuditAnchor{}, errs.New(errs.InvalidArgument, "anchor: want seq > 0 and a hash (the JSON line `harness audit anchor` prints)")
	}
	return a, nil
}

// AuditVerifyAnchored is AuditVerify that also checks the chain still holds
// the anchored head (same seq and hash); nil = no anchor.
func (h *Harness) AuditVerifyAnchored(ctx context.Context, anchor *AuditAnchor) (*AuditVerifyResult, error) {
	leave, err := h.enter()
	if err != nil {
		return nil, err
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var m messages.AuditVerify
	if anchor != nil {
		m.AnchorSeq, m.AnchorHash = anchor.Seq, anchor.Hash
	}
	r, err := h.rt.Audit.VerifyAnchored(ctx, m)
	if err != nil {
		return nil, err
	}
	return &AuditVerifyResult{OK: r.OK, Checked: r.Checked, BrokenSeq: r.BrokenSeq, BrokenReason: r.BrokenReason,
		Unkeyed: r.Unkeyed, KeyID: h.akeys.Ring().Current().ID, Anchored: r.Anchored}, nil
}
