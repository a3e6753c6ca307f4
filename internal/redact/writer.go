package redact

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/contract/errs"
)

const (
	// MaxLine is the longest line a Writer buffers: a longer line is cut
	// (at a blank near the limit when there is one) and redacted in pieces.
	MaxLine = 64 << 10
	// maxHold bounds how much an open PEM block may hold back output.
	maxHold = 1 << 20
)

// Writer redacts a stream. It buffers up to the last newline, redacts the
// complete lines and writes them to the underlying writer, so a secret is
// never split across two redaction passes. A line longer than [MaxLine] is
// flushed in pieces, and a PEM private key block is held back until its END
// line (at most 1 MiB). With [Redactor.WithKnown], the tail of a line cut
// for length (or any tail, when a known value holds a newline) that may
// begin a known form is held back too, so a value split across Write calls
// is still caught. For any chunking of the input, the output equals
// [Redactor.String] of the whole input, unless a line is longer than MaxLine
// or Flush is called mid-stream.
//
// A Writer is safe for concurrent use. Close flushes it but does not close
// the underlying writer.
type Writer struct {
	r *Redactor
	w io.Writer

	mu      sync.Mutex
	buf     []byte // input not yet written
	out     []byte // scratch for the redacted output
	spans   []span // scratch for find
	nl      int    // index of the last '\n' in buf, or -1
	walked  int    // a PEM block is held: buf[:walked] is known to be undecided
	pemOpen bool   // the written output ended inside a PEM block
	err     error  // sticky error of the underlying writer
	closed  bool

	count atomic.Int64
}

// Writer returns a Writer that writes the redaction of its input to w.
func (r *Redactor) Writer(w io.Writer) *Writer {
	return &Writer{r: r, w: w, nl: -1}
}

// Write buffers p and writes out every complete line, redacted. It returns
// len(p) unless the underlying writer failed, after which every call fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errs.New(errs.InvalidArgument, "redact: write to a closed Writer")
	}
	if w.err != nil {
		return 0, w.err
	}
	old := len(w.buf)
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		w.nl = old + i
	}
	if err := w.drain(false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush redacts and writes everything buffered, including a partial last
// line. A secret cut by a mid-stream Flush may be redacted only in part.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	return w.drain(true)
}

// Close flushes the Writer and makes later writes fail. It does not close
// the underlying writer. Closing twice is a no-op.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	err := w.drain(true)
	w.buf, w.out, w.spans = nil, nil, nil
	return err
}

// Count returns the number of redactions written so far.
func (w *Writer) Count() int { return int(w.count.Load()) }

// drain writes out what can be decided now; with final, everything.
func (w *Writer) drain(final bool) error {
	for len(w.buf) > 0 {
		cut, force := len(w.buf), final
		switch {
		case final:
		case w.nl >= 0:
			cut = w.nl + 1
		case len(w.buf) >= MaxLine:
			cut = forcedCut(w.buf)
			force = w.walked > 0 // an over-long line inside a held PEM block
		default:
			return nil
		}
		if !force && w.walked > 0 {
			// A PEM block is held from the start of buf, and its lines up to
			// w.walked are all body lines. Look at the new lines only, so
			// that holding costs linear time.
			next, decided := pemContinue(w.buf[:cut], w.walked)
			if !decided {
				w.walked = next
				if len(w.buf) < maxHold {
					return nil
				}
				force = true
			}
		}
		region := w.buf[:cut]
		res := w.r.find(bytesView(region), force, w.pemOpen, w.spans[:0])
		if res.hold == 0 && !res.knownHold {
			// An open PEM block holds everything back.
			w.walked = cut
			if len(w.buf) < maxHold {
				return nil
			}
			res = w.r.find(bytesView(region), true, w.pemOpen, w.spans[:0])
		}
		w.spans = res.spans
		w.out = w.r.appendRedacted(w.out[:0], region[:res.hold], res.spans)
		done := res.hold
		w.walked = cut - done
		if res.knownHold {
			w.walked = 0 // the held tail may start a known form, not a PEM body
		}
		switch {
		case done == len(region):
			w.pemOpen = res.pemOpen
		case done > 0:
			w.pemOpen = false // the held part starts at a line outside any block
		}
		if len(w.out) > 0 {
			if _, err := w.w.Write(w.out); err != nil {
				w.err = errs.Wrap(errs.Internal, err, "redact: write: %v", err)
				return w.err
			}
		}
		w.count.Add(int64(len(res.spans)))
		w.buf = w.buf[:copy(w.buf, w.buf[done:])]
		if w.nl -= done; w.nl < 0 {
			w.nl = -1
		}
		if cap(w.out) > 4*MaxLine {
			w.out = nil
		}
		if done < cut {
			return nil // the rest waits for more input
		}
	}
	return nil
}

// pemContinue looks at the complete lines of b from offset from on, inside
// the body of a held PEM block. It reports whether one of them decides the
// block (its END line, or a line that is not PEM body), and otherwise how far
// the body lines reach.
func pemContinue(b []byte, from int) (next int, decided bool) {
	for from < len(b) {
		i := bytes.IndexByte(b[from:], '\n')
		if i < 0 {
			return from, false
		}
		line := bytesView(b[from : from+i])
		if k := strings.Index(line, "-----END "); k >= 0 && isBodyPrefix(line[:k]) {
			return from, true
		}
		if pemLineKind(line) == pemOther {
			return from, true
		}
		from += i + 1
	}
	return from, false
}

// forcedCut returns where to cut an over-long line: after the last blank in
// the final 4 KiB before MaxLine, or at MaxLine.
func forcedCut(b []byte) int {
	if i := bytes.LastIndexAny(b[MaxLine-4096:MaxLine], " \t"); i >= 0 {
		return MaxLine - 4096 + i + 1
	}
	return MaxLine
}
