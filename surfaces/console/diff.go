package console

import (
	"encoding/json"
	"strconv"
	"strings"
)

// diffLine is one line of a rendered edit: Kind '-' (removed), '+' (added).
type diffLine struct {
	Kind string
	Text string
}

// diffOp is one edit operation of a patch as a person reads it.
type diffOp struct {
	Op, Path string
	Note     string // e.g. "every occurrence", "overwrite", "mode 0755"
	Lines    []diffLine
}

// patchOp is the shape of an edit operation in an approval's detail
// (apply_patch and target_apply_patch arguments).
type patchOp struct {
	Op        string `json:"op"`
	Path      string `json:"path"`
	OldText   string `json:"old_text"`
	NewText   string `json:"new_text"`
	All       bool   `json:"all"`
	Content   string `json:"content"`
	Overwrite bool   `json:"overwrite"`
	Mode      string `json:"mode"`
}

// maxDiffLines bounds the lines rendered per operation.
const maxDiffLines = 400

// patchDiff renders the edit operations of an approval's detail (the
// operation's arguments as JSON) as removed and added lines; ok is false
// when the detail holds no edit operations.
func patchDiff(detail string) (ops []diffOp, ok bool) {
	var args struct {
		Operations []patchOp `json:"operations"`
	}
	if detail == "" || json.Unmarshal([]byte(detail), &args) != nil || len(args.Operations) == 0 {
		return nil, false
	}
	for _, p := range args.Operations {
		d := diffOp{Op: p.Op, Path: p.Path}
		var notes []string
		switch p.Op {
		case "replace":
			if p.All {
				notes = append(notes, "every occurrence")
			}
			d.Lines = append(lines("-", p.OldText), lines("+", p.NewText)...)
		case "create", "write":
			if p.Overwrite {
				notes = append(notes, "overwrite")
			}
			d.Lines = lines("+", p.Content)
		}
		if p.Mode != "" {
			notes = append(notes, "mode "+p.Mode)
		}
		if len(d.Lines) > maxDiffLines {
			n := len(d.Lines) - maxDiffLines
			d.Lines = append(d.Lines[:maxDiffLines:maxDiffLines], diffLine{Kind: " ", Text: "… " + strconv.Itoa(n) + " more lines (see the arguments)"})
		}
		d.Note = strings.Join(notes, ", ")
		ops = append(ops, d)
	}
	return ops, true
}

func lines(kind, text string) []diffLine {
	if text == "" {
		return nil
	}
	parts := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	out := make([]diffLine, len(parts))
	for i, p := range parts {
		out[i] = diffLine{Kind: kind, Text: p}
	}
	return out
}
