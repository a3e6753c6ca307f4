package loop

import (
	"container/list"
	"strconv"
	"time"
)

// Defaults for the zero fields of Config.
const (
	DefaultThreshold  = 3
	DefaultWindow     = 10 * time.Minute
	DefaultMaxEntries = 10_000
)

// Config tunes a Detector. Zero (or negative) fields take the defaults.
type Config struct {
	// Threshold is how many identical results make the next try a loop
	// (default 3; 1 is raised to 2, the smallest meaningful value).
	Threshold int
	// Window is how far back observations count (default 10 minutes).
	Window time.Duration
	// MaxEntries bounds the keys (scope + op + input) kept (default 10,000); the least
	// recently recorded key is evicted first.
	MaxEntries int
}

func (c Config) withDefaults() Config {
	switch {
	case c.Threshold <= 0:
		c.Threshold = DefaultThreshold
	case c.Threshold == 1:
		c.Threshold = 2
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	return c
}

// Observation is one finished operation.
type Observation struct {
	// Scope is whose repetition this is: observations of one scope never
	// count towards a loop of another ("" = the global scope, for callers
	// that say who they are in no way).
	Scope        string
	Op           string
	InputHash    string
	ResultHash   string
	Failed       bool
	TreeRevision string
	ReceiptID    string
	At           time.Time
}

// Verdict is the answer of Check.
type Verdict struct {
	Loop    bool   `json:"loop"`
	Count   int    `json:"count"`             // repeats counted by the rule that fired (or the same-result streak when none fired)
	Reason  string `json:"reason,omitempty"`  // why this is a loop; "" when it is not
	Earlier string `json:"earlier,omitempty"` // receipt id of the first of the repeats
	Hint    string `json:"hint,omitempty"`    // what the agent should do instead
}

// Detector remembers recent observations. The zero value is not usable; call
// New.
type Detector struct {
	cfg    Config
	keys   map[key]*list.Element    // of *entry
	order  *list.List               // least recently recorded first
	scopes map[string]*list.Element // of *scopeState
	sorder *list.List               // least recently called first
	epochs uint64                   // the last epoch handed out, over all scopes
}

type key struct{ scope, op, input string }

// scopeState is what a scope called last. Its epoch changes whenever the
// scope calls something other than its previous call: a streak counts only
// observations recorded in the epoch the scope is in (no other call in
// between).
type scopeState struct {
	name      string
	op, input string
	epoch     uint64
	at        time.Time
}

type mark struct {
	at      time.Time
	receipt string
}

// streak is a run of consecutive observations of one key. It keeps the first
// mark of the run and its most recent marks (at most cap of them).
type streak struct {
	result string // same-result streak: the result hash
	tree   string
	first  mark
	total  int
	recent []mark // ring, oldest first after normalisation
}

func (s *streak) reset(result, tree string, m mark) {
	s.result, s.tree, s.first, s.total = result, tree, m, 1
	s.recent = append(s.recent[:0], m)
}

func (s *streak) add(m mark, limit int) {
	s.total++
	if len(s.recent) == limit {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:limit-1]
	}
	s.recent = append(s.recent, m)
}

// within counts the marks of the streak no older than since, and returns the
// receipt of the earliest of them.
func (s *streak) within(since time.Time) (int, string) {
	if s.total == 0 {
		return 0, ""
	}
	if !s.first.at.Before(since) {
		// The whole streak is inside the window.
		return s.total, s.first.receipt
	}
	n, earliest := 0, ""
	for i := len(s.recent) - 1; i >= 0; i-- {
		if s.recent[i].at.Before(since) {
			break
		}
		n++
		earliest = s.recent[i].receipt
	}
	return n, earliest
}

type entry struct {
	k     key
	last  time.Time
	epoch uint64 // the scope's epoch of the streaks below
	same  streak // consecutive identical results on one tree revision
	fail  streak // consecutive failures on one tree revision (tree may be "")
}

// New returns an empty Detector.
func New(cfg Config) *Detector {
	return &Detector{cfg: cfg.withDefaults(), keys: make(map[key]*list.Element), order: list.New(),
		scopes: make(map[string]*list.Element), sorder: list.New()}
}

// Config returns the effective configuration (defaults filled in).
func (d *Detector) Config() Config { return d.cfg }

// Len returns the number of keys (scope + op + input) remembered.
func (d *Detector) Len() int { return len(d.keys) }

func (d *Detector) failLimit() int { return max(d.cfg.Threshold-1, 1) }

// Check tells, before op runs with inputHash on treeRevision for scope,
// whether running it would repeat a loop of that scope (see the package
// documentation for the rules). It does not change the detector.
func (d *Detector) Check(scope, op, inputHash, treeRevision string, now time.Time) Verdict {
	el, ok := d.keys[key{scope, op, inputHash}]
	if !ok {
		return Verdict{}
	}
	e := el.Value.(*entry)
	if s, ok := d.scopes[scope]; !ok || s.Value.(*scopeState).epoch != e.epoch {
		// The scope called something else since: no streak.
		return Verdict{}
	}
	since := now.Add(-d.cfg.Window)

	if treeRevision != "" && e.fail.total > 0 && e.fail.tree == treeRevision {
		if n, earliest := e.fail.within(since); n >= d.failLimit() {
			return Verdict{
				Loop:    true,
				Count:   n,
				Earlier: earliest,
				Reason: "the same " + op + " input already failed " + times(n) + " on tree revision " + treeRevision +
					" within " + d.cfg.Window.String() + " and the tree has not changed",
				Hint: "nothing changed since receipt " + earliest + ": the same input failed " + times(n) +
					" on an unchanged tree; change the code or the input before trying again",
			}
		}
	}

	var v Verdict
	if e.same.total > 0 && e.same.tree == treeRevision {
		n, earliest := e.same.within(since)
		v.Count = n
		if n >= d.cfg.Threshold {
			v.Loop, v.Earlier = true, earliest
			v.Reason = "the same " + op + " input returned the same result " + times(n) + " within " + d.cfg.Window.String()
			v.Hint = "nothing changed since receipt " + earliest + ": the same input returned the same result " + times(n) +
				"; use the earlier result or change the input"
		}
	}
	return v
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

// Touch notes that scope called op with inputHash at now (the gate calls
// it for every call, checked or not, after Check): a call that is not the
// scope's previous one ends every streak of the scope. inputHash may be ""
// for operations that are never recorded.
func (d *Detector) Touch(scope, op, inputHash string, now time.Time) {
	d.touch(scope, op, inputHash, now)
	d.evictScopes(now)
}

// touch makes (op, input) the scope's latest call and returns the scope's
// epoch.
func (d *Detector) touch(scope, op, input string, now time.Time) uint64 {
	var s *scopeState
	if el, ok := d.scopes[scope]; ok {
		s = el.Value.(*scopeState)
		d.sorder.MoveToBack(el)
		if s.op != op || s.input != input {
			d.epochs++
			s.op, s.input, s.epoch = op, input, d.epochs
		}
	} else {
		d.epochs++
		s = &scopeState{name: scope, op: op, input: input, epoch: d.epochs}
		d.scopes[scope] = d.sorder.PushBack(s)
	}
	if now.After(s.at) {
		s.at = now
	}
	return s.epoch
}

// Record adds the observation of a finished operation. It is a call of
// o.Scope too: when the scope's previous call was another one, the
// key's streaks start again with o.
func (d *Detector) Record(o Observation) {
	k := key{o.Scope, o.Op, o.InputHash}
	m := mark{at: o.At, receipt: o.ReceiptID}
	epoch := d.touch(o.Scope, o.Op, o.InputHash, o.At)
	var e *entry
	if el, ok := d.keys[k]; ok {
		e = el.Value.(*entry)
		d.order.MoveToBack(el)
	} else {
		e = &entry{k: k, epoch: epoch}
		d.keys[k] = d.order.PushBack(e)
	}
	if o.At.After(e.last) {
		e.last = o.At
	}
	if e.epoch != epoch {
		// Another call of the scope came in between: nothing repeats.
		e.epoch = epoch
		e.same = streak{recent: e.same.recent[:0]}
		e.fail = streak{recent: e.fail.recent[:0]}
	}

	if e.same.total > 0 && e.same.result == o.ResultHash && e.same.tree == o.TreeRevision {
		e.same.add(m, d.cfg.Threshold)
	} else {
		e.same.reset(o.ResultHash, o.TreeRevision, m)
	}

	switch {
	case !o.Failed:
		e.fail = streak{recent: e.fail.recent[:0]}
	case e.fail.total > 0 && e.fail.tree == o.TreeRevision:
		e.fail.add(m, d.failLimit())
	default:
		e.fail.reset("", o.TreeRevision, m)
	}

	d.evict(o.At)
	d.evictScopes(o.At)
}

// evictScopes drops scopes beyond MaxEntries and scopes that called nothing
// within the window of now, least recently called first. A scope seen
// again gets a new epoch, so an evicted scope never continues a streak.
func (d *Detector) evictScopes(now time.Time) {
	since := now.Add(-d.cfg.Window)
	for d.sorder.Len() > 0 {
		front := d.sorder.Front()
		s := front.Value.(*scopeState)
		if d.sorder.Len() <= d.cfg.MaxEntries && !s.at.Before(since) {
			return
		}
		d.sorder.Remove(front)
		delete(d.scopes, s.name)
	}
}

// evict drops keys beyond MaxEntries and keys not recorded within the window
// of now, oldest first.
func (d *Detector) evict(now time.Time) {
	since := now.Add(-d.cfg.Window)
	for d.order.Len() > 0 {
		front := d.order.Front()
		e := front.Value.(*entry)
		if d.order.Len() <= d.cfg.MaxEntries && !e.last.Before(since) {
			return
		}
		d.order.Remove(front)
		delete(d.keys, e.k)
	}
}
