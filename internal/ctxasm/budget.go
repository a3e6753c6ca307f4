package ctxasm

import (
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/contract/errs"
)

// Budget bounds.
const (
	DefaultBudget = 8000
	MinBudget     = 500
	MaxBudget     = 200000
	// minShare is the least a part may take before it counts as oversized.
	minShare = 400
	// minSummary is the least a summary must keep to be worth showing.
	minSummary = 48
)

// CheckBudget validates a token budget (0 = DefaultBudget).
func CheckBudget(b int) (int, error) {
	if b == 0 {
		return DefaultBudget, nil
	}
	if b < MinBudget || b > MaxBudget {
		return 0, errs.New(errs.InvalidArgument, "token_budget is %d: between %d and %d (leave it out for %d)", b, MinBudget, MaxBudget, DefaultBudget).
			With("min", MinBudget).With("max", MaxBudget)
	}
	return b, nil
}

// TokenBudget is what the assembled context cost.
type TokenBudget struct {
	Budget    int    `json:"budget"`
	Used      int    `json:"used"`
	Remaining int    `json:"remaining"`
	Parts     []Cost `json:"parts"`
}

// Cost is the tokens of one included part.
type Cost struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Tokens     int    `json:"tokens"`
	Summarised bool   `json:"summarised,omitempty"`
}

// Pruned is a part left out, and why.
type Pruned struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Tokens int    `json:"tokens"`
	Reason string `json:"reason"`
}

// Summary is a part cut down to a summary, and why.
type Summary struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	FromTokens int    `json:"from_tokens"`
	ToTokens   int    `json:"to_tokens"`
	Reason     string `json:"reason"`
}

// Allocation is the result of Allocate.
type Allocation struct {
	Parts      []Part
	Budget     TokenBudget
	Pruned     []Pruned
	Summarised []Summary
}

// Allocate fits parts into budget tokens (see the package doc): the
// included parts in priority order, the pruned and summarised ones with
// their reasons. The included parts' tokens never sum above budget.
func Allocate(parts []Part, budget int) Allocation {
	ps := slices.Clone(parts)
	slices.SortStableFunc(ps, func(a, b Part) int {
		if a.pri != b.pri {
			return a.pri - b.pri
		}
		if a.order != b.order {
			return a.order - b.order
		}
		return strings.Compare(a.ID, b.ID)
	})
	out := Allocation{Budget: TokenBudget{Budget: budget, Parts: []Cost{}}, Pruned: []Pruned{}, Summarised: []Summary{}}
	share := max(budget/4, minShare)
	seen := map[[32]byte]string{}
	left := budget
	for _, p := range ps {
		full := cost(p.Title, p.Text, p.tk)
		if strings.TrimSpace(p.Text) == "" {
			out.Pruned = append(out.Pruned, Pruned{ID: p.ID, Kind: p.Kind, Tokens: full, Reason: "empty"})
			continue
		}
		h := sha256.Sum256([]byte(strings.TrimSpace(p.Text)))
		if first, dup := seen[h]; dup {
			out.Pruned = append(out.Pruned, Pruned{ID: p.ID, Kind: p.Kind, Tokens: full, Reason: "duplicate of " + first})
			continue
		}
		seen[h] = p.ID
		if p.stale != "" {
			out.Pruned = append(out.Pruned, Pruned{ID: p.ID, Kind: p.Kind, Tokens: full, Reason: "stale: " + p.stale})
			continue
		}
		limit, why := full, ""
		switch {
		case full > share && share <= left:
			limit, why = share, "oversized: ~"+strconv.Itoa(full)+" tokens, above the share of one part ("+strconv.Itoa(share)+")"
		case full > left:
			limit, why = left, "~"+strconv.Itoa(full)+" tokens, above the "+strconv.Itoa(left)+" left in the budget"
		}
		if why != "" {
			if limit < minSummary {
				out.Pruned = append(out.Pruned, Pruned{ID: p.ID, Kind: p.Kind, Tokens: full, Reason: "over budget: ~" + strconv.Itoa(full) + " tokens, " + strconv.Itoa(left) + " left"})
				continue
			}
			s := Summarise(p.Title, p.Text, p.tk, limit)
			if s == "" {
				out.Pruned = append(out.Pruned, Pruned{ID: p.ID, Kind: p.Kind, Tokens: full, Reason: "over budget: ~" + strconv.Itoa(full) + " tokens, " + strconv.Itoa(left) + " left"})
				continue
			}
			p.Text, p.Summarised = s, true
			out.Summarised = append(out.Summarised, Summary{ID: p.ID, Kind: p.Kind, FromTokens: full, ToTokens: cost(p.Title, s, p.tk), Reason: why})
		}
		p.Tokens = cost(p.Title, p.Text, p.tk)
		if p.Tokens > left { // cannot happen: Summarise fits limit <= left
			out.Pruned = append(out.Pruned, Pruned{ID: p.ID, Kind: p.Kind, Tokens: full, Reason: "over budget"})
			continue
		}
		left -= p.Tokens
		out.Parts = append(out.Parts, p)
		out.Budget.Parts = append(out.Budget.Parts, Cost{ID: p.ID, Kind: p.Kind, Tokens: p.Tokens, Summarised: p.Summarised})
	}
	out.Budget.Used = budget - left
	out.Budget.Remaining = left
	return out
}
