package ctxasm

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/messages"
)

// genPart draws a part of any kind, size and priority, sometimes stale,
// sometimes a copy of an earlier text.
func genPart(t *rapid.T, i int, texts []string) Part {
	kinds := []string{KindRunState, KindState, KindRule, KindDoc, KindEvent, KindObservation}
	var text string
	if len(texts) > 0 && rapid.IntRange(0, 5).Draw(t, "dup") == 0 {
		text = texts[rapid.IntRange(0, len(texts)-1).Draw(t, "which")]
	} else {
		line := rapid.StringMatching(`[a-zA-Z #é{}":]{0,80}`).Draw(t, "line")
		text = strings.Repeat(line+"\n", rapid.IntRange(0, 3000).Draw(t, "lines"))
	}
	p := Part{ID: "p" + strconv.Itoa(i), Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Title: "part " + strconv.Itoa(i), Text: text,
		pri: rapid.IntRange(0, 7).Draw(t, "pri"), order: i, tk: TextKind(rapid.IntRange(0, 2).Draw(t, "tk"))}
	if rapid.IntRange(0, 9).Draw(t, "stale") == 0 {
		p.stale = "test"
	}
	return p
}

// TestAllocateNeverExceedsBudget: for budgets from 500 to 100,000 and any
// parts, the included parts' tokens (recounted from their text) sum to
// Used, never above the budget; Allocate is deterministic.
func TestAllocateNeverExceedsBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.IntRange(MinBudget, 100000).Draw(t, "budget")
		n := rapid.IntRange(0, 30).Draw(t, "n")
		var parts []Part
		var texts []string
		for i := range n {
			p := genPart(t, i, texts)
			parts = append(parts, p)
			texts = append(texts, p.Text)
		}
		a := Allocate(parts, budget)
		sum := 0
		for _, p := range a.Parts {
			c := cost(p.Title, p.Text, p.tk)
			if c != p.Tokens {
				t.Fatalf("part %s: tokens %d, recounted %d", p.ID, p.Tokens, c)
			}
			sum += c
		}
		if sum != a.Budget.Used || sum > budget || a.Budget.Remaining != budget-sum {
			t.Fatalf("used %d (sum %d) remaining %d of %d", a.Budget.Used, sum, a.Budget.Remaining, budget)
		}
		if len(a.Parts)+len(a.Pruned) != n {
			t.Fatalf("%d included + %d pruned of %d parts", len(a.Parts), len(a.Pruned), n)
		}
		again := Allocate(parts, budget)
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(again)
		if string(x) != string(y) {
			t.Fatalf("Allocate is not deterministic")
		}
	})
}

// TestAssembleBudgetsAndDeterminism: on a fixture with every kind of file
// and a run, Assemble keeps to any budget from 500 to 100,000 and answers
// byte for byte the same for the same input.
func TestAssembleBudgetsAndDeterminism(t *testing.T) {
	big := strings.Repeat("## Heading\n"+strings.Repeat("words of prose that fill the file\n", 40), 30)
	root := fixture(t, map[string]string{
		"STATE.md": big, "PLAN.md": "# Plan\n" + big, "AGENTS.md": agents + big, "CLAUDE.md": big, "README.md": big,
		".cursor/rules/a.mdc": "---\nalwaysApply: true\n---\n" + big, "CONTRIBUTING.md": big, ".codebase/x.md": big,
		"docs/a.md": "# A\n", "main.go": "package main\n", ".github/copilot-instructions.md": "be kind\n",
	})
	age(t, root.Path())
	var c Cache
	st := messages.RunState{RunID: "run_1", Status: messages.RunActive, CurrentStage: "build",
		Observations: []messages.RunObservation{{At: time.Unix(1, 0), Source: "agent", Kind: "finding", Text: big}}}
	spans := []messages.RunSpan{{SpanID: "s1", Op: "read_file", Outcome: "error", ErrorCode: "NOT_FOUND"}}
	rapid.Check(t, func(t *rapid.T) {
		budget := rapid.IntRange(MinBudget, 100000).Draw(t, "budget")
		req := Request{Budget: budget, Run: &st, Spans: spans, Command: rapid.SampledFrom([]string{"", "apply_patch", "run_check"}).Draw(t, "cmd")}
		req.Op = map[string]OpFacts{"apply_patch": applyPatch, "run_check": runCheck}[req.Command]
		a := Assemble(Scan(root, &c, time.Now()), req)
		b := Assemble(Scan(root, &c, time.Now()), req)
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if string(x) != string(y) {
			t.Fatalf("not deterministic at budget %d", budget)
		}
		sum := 0
		for _, l := range [][]Part{a.State, a.Rules, a.Docs, a.Events, a.Observations} {
			for _, p := range l {
				sum += cost(p.Title, p.Text, p.tk)
			}
		}
		if sum > budget || sum != a.Budget.Used {
			t.Fatalf("parts cost %d, used %d, budget %d", sum, a.Budget.Used, budget)
		}
		if len(a.Events) == 0 || a.Events[0].ID != "event:failure:s1" {
			t.Fatalf("the failure is not the first event at budget %d: %v", budget, ids(a.Events))
		}
	})
}
