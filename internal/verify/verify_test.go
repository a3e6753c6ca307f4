package verify

import (
	"strings"
	"testing"
	"time"
)

const (
	revA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	revB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	sumX = "1111111111111111111111111111111111111111111111111111111111111111"
	sumY = "2222222222222222222222222222222222222222222222222222222222222222"
)

var argv = []string{"go", "test", "./pkg", "-run", "TestX"}

func TestCheck(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name     string
		f        CheckFacts
		verified bool
		reason   []string // substrings of the reason
		files    []string
	}{
		{"current evidence", CheckFacts{Argv: argv, Revision: revA, Found: true, FoundAt: at, FoundBy: "pid 42"}, true,
			[]string{"current content revision aaaaaaaaaaaa", "pid 42", "2026-01-02T03:04:05Z"}, nil},
		{"no evidence at all", CheckFacts{Argv: argv, Revision: revA}, false,
			[]string{"no passing run", "aaaaaaaaaaaa", "never evidence"}, nil},
		{"stale, files named", CheckFacts{Argv: argv, Revision: revB, Previous: true, PreviousRevision: revA,
			ChangedFiles: []string{"pkg/a.go", "pkg/b.go"}, ChangedKnown: true}, false,
			[]string{"stale", "revision aaaaaaaaaaaa", "now bbbbbbbbbbbb", "changed since: pkg/a.go, pkg/b.go"}, []string{"pkg/a.go", "pkg/b.go"}},
		{"stale, files unknown: the revisions are named", CheckFacts{Argv: argv, Revision: revB, Previous: true, PreviousRevision: revA,
			Reasons: []string{"HEAD moved from 1234567 to 89abcde (changed files unknown)"}}, false,
			[]string{"cannot be named", "aaaaaaaaaaaa → bbbbbbbbbbbb", "HEAD moved"}, nil},
		{"stale, no file differs", CheckFacts{Argv: argv, Revision: revB, Previous: true, PreviousRevision: revA, ChangedKnown: true,
			Reasons: []string{"HEAD moved from 1234567 to 89abcde (no file changes)"}}, false,
			[]string{"no file differs", "no file changes"}, nil},
		{"same content, other environment", CheckFacts{Argv: argv, Revision: revA, Previous: true, PreviousRevision: revA,
			Reasons: []string{`go version changed from "go1.25" to "go1.26"`}}, false,
			[]string{"another environment", "go version changed"}, nil},
		{"identity not computable", CheckFacts{Argv: argv, Err: "not a git repository"}, false,
			[]string{"cannot be computed", "not a git repository"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.f)
			if v.Verified != tt.verified {
				t.Fatalf("verified = %v (%s), want %v", v.Verified, v.Reason, tt.verified)
			}
			for _, want := range tt.reason {
				if !strings.Contains(v.Reason, want) {
					t.Errorf("reason %q, want it to contain %q", v.Reason, want)
				}
			}
			if strings.Join(v.ChangedFiles, ",") != strings.Join(tt.files, ",") {
				t.Errorf("changed files %q, want %q", v.ChangedFiles, tt.files)
			}
			if v.Verified != (v.Fix == "") {
				t.Errorf("fix %q: a blocker names its fix, a verified piece has none", v.Fix)
			}
			if !v.Verified && tt.f.Err == "" && (!strings.Contains(v.Fix, "run_check") || !strings.Contains(v.Fix, "run_verify") || !strings.Contains(v.Fix, `"TestX"`)) {
				t.Errorf("fix %q, want it to name run_check with the argv and run_verify", v.Fix)
			}
		})
	}
}

func TestCheckNamesAtMostSomeFiles(t *testing.T) {
	var files []string
	for i := range MaxChangedFiles + 5 {
		files = append(files, "f"+string(rune('a'+i)))
	}
	v := Check(CheckFacts{Argv: argv, Revision: revB, Previous: true, PreviousRevision: revA, ChangedFiles: files, ChangedKnown: true})
	if len(v.ChangedFiles) != MaxChangedFiles || !strings.Contains(v.Reason, "and 5 more") {
		t.Errorf("%d files, reason %q; want %d and a count of the rest", len(v.ChangedFiles), v.Reason, MaxChangedFiles)
	}
}

func TestReceipt(t *testing.T) {
	tests := []struct {
		name     string
		f        ReceiptFacts
		verified bool
		reason   string
		files    []string
	}{
		{"every file as written", ReceiptFacts{ReceiptID: "rcpt_1", Found: true, Operation: "apply_patch",
			Files: []FileState{{Path: "a.go", Wrote: sumX, Now: sumX}, {Path: "gone.go", Wrote: "", Now: ""}}}, true, "still has the digest", nil},
		{"edited afterwards", ReceiptFacts{ReceiptID: "rcpt_1", Found: true, Operation: "apply_patch",
			Files: []FileState{{Path: "a.go", Wrote: sumX, Now: sumY}, {Path: "b.go", Wrote: sumX, Now: sumX}}}, false, "a.go changed after the write", []string{"a.go"}},
		{"deleted afterwards", ReceiptFacts{ReceiptID: "rcpt_1", Found: true, Operation: "apply_patch",
			Files: []FileState{{Path: "a.go", Wrote: sumX, Now: ""}}}, false, "a.go was deleted after the write", []string{"a.go"}},
		{"recreated after its deletion", ReceiptFacts{ReceiptID: "rcpt_1", Found: true, Operation: "apply_patch",
			Files: []FileState{{Path: "a.go", Wrote: "", Now: sumY}}}, false, "exists again", []string{"a.go"}},
		{"unreadable now", ReceiptFacts{ReceiptID: "rcpt_1", Found: true, Operation: "apply_patch",
			Files: []FileState{{Path: "a.go", Wrote: sumX, Err: "is a directory"}}}, false, "cannot be read", []string{"a.go"}},
		{"wrote no contents", ReceiptFacts{ReceiptID: "rcpt_1", Found: true, Operation: "git_commit"}, false, "wrote no file contents", nil},
		{"unknown", ReceiptFacts{ReceiptID: "rcpt_9"}, false, "is not stored", nil},
		{"store error", ReceiptFacts{ReceiptID: "rcpt_9", Err: "closed"}, false, "cannot be read", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Receipt(tt.f)
			if v.Verified != tt.verified || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("got %+v, want verified %v with %q", v, tt.verified, tt.reason)
			}
			if strings.Join(v.ChangedFiles, ",") != strings.Join(tt.files, ",") {
				t.Errorf("changed files %q, want %q", v.ChangedFiles, tt.files)
			}
			if v.Verified != (v.Fix == "") {
				t.Errorf("fix %q", v.Fix)
			}
		})
	}
}

func TestFile(t *testing.T) {
	tests := []struct {
		name     string
		f        FileFacts
		verified bool
		reason   string
	}{
		{"same digest", FileFacts{Path: "a.go", Want: sumX, Exists: true, Now: sumX}, true, "has the claimed sha256"},
		{"other digest", FileFacts{Path: "a.go", Want: sumX, Exists: true, Now: sumY}, false, "not the claimed"},
		{"absent", FileFacts{Path: "a.go", Want: sumX}, false, "does not exist"},
		{"secret", FileFacts{Path: ".env", Want: sumX, Err: "path \".env\" is a secret path"}, false, "cannot be verified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := File(tt.f)
			if v.Verified != tt.verified || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("got %+v, want verified %v with %q", v, tt.verified, tt.reason)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	ok := Verdict{Verified: true, Reason: "ok"}
	bad := Verdict{Reason: "stale", Fix: "run it again", ChangedFiles: []string{"a.go"}}
	tests := []struct {
		name     string
		claims   []Judged
		passed   bool
		verified []bool
		blockers []string // "claim/evidence: reason"
	}{
		{"no claim", nil, false, []bool{}, []string{"-1/-1: no claim is recorded"}},
		{"claim without evidence stays claimed", []Judged{{}}, false, []bool{false}, []string{"0/-1: claim 0 has no evidence"}},
		{"all verified", []Judged{{Verdicts: []Verdict{ok, ok}, Kinds: []string{KindCheck, KindFile}}, {Verdicts: []Verdict{ok}, Kinds: []string{KindReceipt}}},
			true, []bool{true, true}, nil},
		{"one stale piece blocks its claim and the stage", []Judged{{Verdicts: []Verdict{ok, bad}, Kinds: []string{KindFile, KindCheck}}, {Verdicts: []Verdict{ok}, Kinds: []string{KindFile}}},
			false, []bool{false, true}, []string{"0/1: stale"}},
		{"an evidence-less claim blocks a verified one", []Judged{{Verdicts: []Verdict{ok}, Kinds: []string{KindFile}}, {}},
			false, []bool{true, false}, []string{"1/-1: claim 1 has no evidence"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Decide("tests", tt.claims)
			if o.Passed != tt.passed {
				t.Fatalf("passed = %v, want %v (%+v)", o.Passed, tt.passed, o)
			}
			wantStatus := StatusClaimed
			if tt.passed {
				wantStatus = StatusVerified
			}
			if o.Status != wantStatus {
				t.Errorf("status %q, want %q", o.Status, wantStatus)
			}
			if len(o.ClaimVerified) != len(tt.verified) {
				t.Fatalf("claim verdicts %v, want %v", o.ClaimVerified, tt.verified)
			}
			for i := range tt.verified {
				if o.ClaimVerified[i] != tt.verified[i] {
					t.Errorf("claim %d verified = %v, want %v", i, o.ClaimVerified[i], tt.verified[i])
				}
			}
			if len(o.Blockers) != len(tt.blockers) {
				t.Fatalf("blockers %+v, want %q", o.Blockers, tt.blockers)
			}
			for i, b := range o.Blockers {
				got := itoa(b.Claim) + "/" + itoa(b.Evidence) + ": " + b.Reason
				if !strings.HasPrefix(got, tt.blockers[i]) {
					t.Errorf("blocker %d = %q, want prefix %q", i, got, tt.blockers[i])
				}
				if b.Stage != "tests" || b.Fix == "" {
					t.Errorf("blocker %d = %+v, want stage tests and a fix", i, b)
				}
			}
		})
	}
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	return string(rune('0' + i))
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		e    Evidence
		want string // "" = valid
	}{
		{"check", Evidence{Kind: KindCheck, Argv: argv, Cwd: "pkg"}, ""},
		{"check without argv", Evidence{Kind: KindCheck}, "needs argv"},
		{"check with a path", Evidence{Kind: KindCheck, Argv: argv, Path: "a"}, "takes argv"},
		{"check with a negative timeout", Evidence{Kind: KindCheck, Argv: argv, TimeoutMs: -1}, "negative"},
		{"receipt", Evidence{Kind: KindReceipt, ReceiptID: "rcpt_abc_1"}, ""},
		{"receipt without id", Evidence{Kind: KindReceipt}, "needs receipt_id"},
		{"receipt with argv", Evidence{Kind: KindReceipt, ReceiptID: "rcpt_1", Argv: argv}, "receipt_id only"},
		{"file", Evidence{Kind: KindFile, Path: "a.go", SHA256: "sha256:" + strings.ToUpper(sumX)}, ""},
		{"file without path", Evidence{Kind: KindFile, SHA256: sumX}, "needs path"},
		{"file with a short digest", Evidence{Kind: KindFile, Path: "a.go", SHA256: "abc"}, "64 hex"},
		{"unknown kind", Evidence{Kind: "vibes"}, "one of check, receipt, file, review"},
		{"review by anyone", Evidence{Kind: KindReview}, ""},
		{"review by a person", Evidence{Kind: KindReview, Reviewer: ReviewerPerson}, ""},
		{"review by a run", Evidence{Kind: KindReview, Reviewer: "run_abc"}, ""},
		{"review by something else", Evidence{Kind: KindReview, Reviewer: "bob"}, "person, a reviewer run"},
		{"review with a path", Evidence{Kind: KindReview, Path: "a.go"}, "reviewer only"},
		{"reviewer on a check", Evidence{Kind: KindCheck, Argv: argv, Reviewer: "person"}, "review evidence only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.e)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate: %v, want an error with %q", err, tt.want)
			}
		})
	}
	if got, ok := NormalizeSHA256(" SHA256:" + strings.ToUpper(sumX)); !ok || got != sumX {
		t.Errorf("NormalizeSHA256 = %q, %v", got, ok)
	}
}

func TestChangedPaths(t *testing.T) {
	prev := map[string]string{"a": "1", "b": "2", "gone": "3"}
	cur := map[string]string{"a": "1", "b": "9", "new": "4"}
	if got := strings.Join(ChangedPaths(prev, cur), ","); got != "b,gone,new" {
		t.Errorf("ChangedPaths = %s, want b,gone,new", got)
	}
	if got := strings.Join(Union([]string{"b", "a"}, []string{"c", "a"}), ","); got != "a,b,c" {
		t.Errorf("Union = %s, want a,b,c", got)
	}
	if Short("") != "(none)" || Short("sha256:0123456789abcdef") != "0123456789ab" {
		t.Errorf("Short: %q %q", Short(""), Short("sha256:0123456789abcdef"))
	}
}

func TestCheckReview(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	rv := func(who, verdict string, min int) Review {
		return Review{Reviewer: who, Verdict: verdict, At: t0.Add(time.Duration(min) * time.Minute)}
	}
	tests := []struct {
		name    string
		want    string
		reviews []Review
		ok      bool
		reason  string
	}{
		{"no review", "", nil, false, "has no review"},
		{"a person approves", "", []Review{rv(ReviewerPerson, VerdictApprove, 1)}, true, "approved by person"},
		{"another run approves", "", []Review{rv("run_rev", VerdictApprove, 1)}, true, "approved by run_rev"},
		{"the run reviewing itself never counts", "", []Review{rv("run_self", VerdictApprove, 1)}, false, "has no review"},
		{"a later reject overrides", "", []Review{rv("run_rev", VerdictApprove, 1), rv(ReviewerPerson, VerdictReject, 2)}, false, "rejects"},
		{"a later approve overrides a reject", "", []Review{rv("run_rev", VerdictReject, 1), rv("run_rev", VerdictApprove, 2)}, true, "approved"},
		{"the named reviewer only", ReviewerPerson, []Review{rv("run_rev", VerdictApprove, 1)}, false, "no review by person"},
		{"the named reviewer approves", "run_rev", []Review{rv(ReviewerPerson, VerdictReject, 3), rv("run_rev", VerdictApprove, 1)}, true, "approved by run_rev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckReview(ReviewFacts{RunID: "run_self", Stage: "impl", Want: tt.want, Reviews: tt.reviews})
			if v.Verified != tt.ok || !strings.Contains(v.Reason, tt.reason) {
				t.Fatalf("CheckReview = %+v, want verified %v with %q", v, tt.ok, tt.reason)
			}
			if !v.Verified && !strings.Contains(v.Fix, "run_review") {
				t.Fatalf("fix %q does not name run_review", v.Fix)
			}
		})
	}
	var st Stage
	for i := range MaxReviews + 5 {
		AddReview(&st, rv("run_rev", VerdictApprove, i))
	}
	if len(st.Reviews) != MaxReviews || !st.Reviews[len(st.Reviews)-1].At.Equal(t0.Add(time.Duration(MaxReviews+4)*time.Minute)) {
		t.Fatalf("AddReview kept %d reviews, the newest last", len(st.Reviews))
	}
}
