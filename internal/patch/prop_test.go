package patch

import (
	"context"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/contract/errs"
	"pgregory.net/rapid"
)

var propPaths = []string{"a.txt", "b.txt", "d1/c.txt", "d1/d2/e.txt"}

// modelFile is the reference model's view of one file.
type modelFile struct {
	data   string
	mode   fs.FileMode
	exists bool
}

// model applies ops to files the simple way; ok is false on a conflict.
func model(files map[string]modelFile, ops []Op) (map[string]modelFile, bool) {
	out := make(map[string]modelFile, len(files))
	for k, v := range files {
		out[k] = v
	}
	for _, op := range ops {
		f := out[op.Path]
		switch op.Op {
		case OpReplace:
			if !f.exists {
				return nil, false
			}
			n := strings.Count(f.data, op.OldText)
			if n == 0 || (n > 1 && !op.All) {
				return nil, false
			}
			f.data = strings.Replace(f.data, op.OldText, op.NewText, -1)
		case OpCreate, OpWrite:
			if op.Op == OpCreate && f.exists && !op.Overwrite {
				return nil, false
			}
			switch {
			case op.Mode != "":
				m, _ := ParseMode(op.Mode)
				f.mode = m
			case !f.exists:
				f.mode = 0o644
			}
			f.data, f.exists = op.Content, true
		case OpDelete:
			if !f.exists {
				return nil, false
			}
			f = modelFile{}
		}
		out[op.Path] = f
	}
	return out, true
}

func genText(t *rapid.T, label string, min int) string {
	return rapid.StringOfN(rapid.SampledFrom([]rune("ab \n")), min, 6, -1).Draw(t, label)
}

func genOp(t *rapid.T) Op {
	op := Op{
		Op:   rapid.SampledFrom([]string{OpReplace, OpCreate, OpWrite, OpDelete}).Draw(t, "op"),
		Path: rapid.SampledFrom(propPaths).Draw(t, "path"),
	}
	switch op.Op {
	case OpReplace:
		op.OldText = genText(t, "old", 1)
		op.NewText = genText(t, "new", 0)
		op.All = rapid.Bool().Draw(t, "all")
	case OpCreate, OpWrite:
		op.Content = genText(t, "content", 0)
		op.Mode = rapid.SampledFrom([]string{"", "", "0755", "0600"}).Draw(t, "mode")
		op.Overwrite = op.Op == OpCreate && rapid.Bool().Draw(t, "overwrite")
	}
	return op
}

// TestApplyProperty: random op sequences over a small file set either succeed
// with the model's contents or leave the tree byte-identical.
func TestApplyProperty(t *testing.T) {
	parent := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(parent, "case")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)

		initial := make(map[string]modelFile)
		for _, p := range propPaths {
			if !rapid.Bool().Draw(rt, "exists "+p) {
				continue
			}
			f := modelFile{
				data:   genText(rt, "data "+p, 0),
				mode:   rapid.SampledFrom([]fs.FileMode{0o644, 0o755, 0o600}).Draw(rt, "mode "+p),
				exists: true,
			}
			initial[p] = f
			writeFile(rt, dir, p, f.data, f.mode)
		}
		ops := rapid.SliceOfN(rapid.Custom(genOp), 1, 6).Draw(rt, "ops")
		failAt := rapid.IntRange(0, 4).Draw(rt, "failAt") // 0: never
		fenceFailed := false
		calls := 0
		o := Options{NoSync: true, Fence: func() error {
			calls++
			if calls == failAt {
				fenceFailed = true
				return errs.New(errs.LeaseLost, "injected")
			}
			return nil
		}}

		before := snapshot(rt, dir)
		res, err := Apply(context.Background(), testRoot{dir}, ops, o)
		want, ok := model(initial, ops)
		switch {
		case !ok:
			if codeOf(err) != errs.PatchConflict {
				rt.Fatalf("err = %v, want PATCH_CONFLICT", err)
			}
			if calls != 0 {
				rt.Fatalf("fence calls = %d, want 0 on a conflict", calls)
			}
			assertTree(rt, dir, before)
			return
		case fenceFailed:
			if codeOf(err) != errs.LeaseLost {
				rt.Fatalf("err = %v, want LEASE_LOST", err)
			}
			assertTree(rt, dir, before)
			return
		case err != nil:
			rt.Fatalf("Apply: %v", err)
		}
		if len(res.Changes) != len(ops) {
			rt.Fatalf("changes = %d, want %d", len(res.Changes), len(ops))
		}
		wantTree := make(map[string]entry)
		for p, e := range before {
			if e.Kind == "dir" {
				wantTree[p] = e
			}
		}
		for p, f := range want {
			if !f.exists {
				continue
			}
			wantTree[p] = fileEntry(f.data, f.mode)
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				if _, ok := wantTree[d]; !ok {
					wantTree[d] = entry{Kind: "dir", Mode: 0o755}
				}
			}
		}
		assertTree(rt, dir, wantTree)
		// The last change of each path reports the final digest.
		last := make(map[string]string)
		for _, ch := range res.Changes {
			last[ch.Path] = ch.After
		}
		for p, after := range last {
			got, err := Digest(dir + "/" + p)
			if err != nil || got != after {
				rt.Fatalf("Digest(%s) = %q, %v; want %q", p, got, err, after)
			}
		}
	})
}

// FuzzApply checks that arbitrary ops never panic, that failures are coded
// and leave the tree untouched, and that success matches the model.
func FuzzApply(f *testing.F) {
	f.Add("replace", "a.txt", "one", "1", false, "", false, "")
	f.Add("replace", "a.txt", "o", "0", true, "", false, "")
	f.Add("create", "new/x", "", "", false, "hi\x00", false, "0755")
	f.Add("create", "a.txt", "", "", false, "x", true, "")
	f.Add("write", "../escape", "", "", false, "x", false, "")
	f.Add("delete", "a.txt", "", "", false, "", false, "")
	f.Add("move", "a.txt", "", "", false, "", false, "999")
	f.Add("write", "a.txt/sub", "", "", false, "x", false, "")
	f.Fuzz(func(t *testing.T, kind, p, old, new string, all bool, content string, overwrite bool, mode string) {
		dir := setup(t, map[string]string{"a.txt": "one two one", "d/b.txt": "b"})
		before := snapshot(t, dir)
		ops := []Op{{Op: kind, Path: p, OldText: old, NewText: new, All: all, Content: content, Overwrite: overwrite, Mode: mode}}
		_, err := Apply(context.Background(), testRoot{dir}, ops, noSync())
		if err != nil {
			if code := codeOf(err); code == errs.Internal || code == "" {
				t.Fatalf("err = %v, want a specific code", err)
			}
			assertTree(t, dir, before)
			return
		}
		if strings.Contains(p, "..") || strings.ContainsRune(p, 0) {
			return
		}
		// On success nothing but the named path may have changed.
		after := snapshot(t, dir)
		for k, v := range before {
			if w, ok := after[k]; v.Kind == "file" && ok && w != v && k != path.Clean(p) {
				t.Fatalf("unrelated path %q changed: %v -> %v", k, v, w)
			}
		}
	})
}
