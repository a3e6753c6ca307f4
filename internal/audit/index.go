package audit

// The audit log's secondary index: each entry is also recorded under a few
// terms (its request id, its input hash, a policy load's digest), in the
// transaction that writes it, so a query naming one of them reads the
// entries it names instead of the whole log. commit_verify finds a write's
// entry, the approvals it used and the load of the policy it names this
// way, at a cost independent of the log's length.

// IndexTerms returns the terms e is indexed under: its request id and its
// input hash, each only when set.
func IndexTerms(e Entry) []string {
	var terms []string
	if e.RequestID != "" {
		terms = append(terms, requestTerm(e.RequestID))
	}
	if e.InputHash != "" {
		terms = append(terms, inputTerm(e.InputHash))
	}
	if e.Kind == KindPolicyLoad && e.PolicyDigest != "" {
		terms = append(terms, policyTerm(e.PolicyDigest))
	}
	return terms
}

// IndexTerm returns the term a query by f can read through the index
// instead of scanning the log, or "" when it names none.
func (f Filter) IndexTerm() string {
	switch {
	case f.RequestID != "":
		return requestTerm(f.RequestID)
	case f.InputHash != "":
		return inputTerm(f.InputHash)
	case f.PolicyDigest != "" && f.Kind == KindPolicyLoad:
		return policyTerm(f.PolicyDigest)
	}
	return ""
}

// ByPolicy says whether the term of IndexTerm is a policy load's digest:
// a log written before that term existed has it from a later entry on
// than the other terms.
func (f Filter) ByPolicy() bool {
	return f.RequestID == "" && f.InputHash == "" && f.PolicyDigest != "" && f.Kind == KindPolicyLoad
}

func requestTerm(id string) string    { return "request\x00" + id }
func inputTerm(hash string) string    { return "input\x00" + hash }
func policyTerm(digest string) string { return "policy\x00" + digest }

// Fork returns a Verifier that continues where v stopped: it accepts the
// entries after the last one v accepted, with v's counts so far. A check
// that held can be carried on without reading the entries it read.
func (v *Verifier) Fork() *Verifier {
	c := *v
	return &c
}

// Position returns the seq of the last entry the Verifier accepted.
func (v *Verifier) Position() uint64 { return v.prev.Seq }
