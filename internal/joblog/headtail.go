package joblog

import (
	"errors"
	"unicode/utf8"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/internal/proc"
)

// HeadTail returns the log dir/name as a Fast Path command's output is
// kept (proc.HeadTail): the whole redacted stream when it is at most
// maxBytes long, else its first maxBytes/2 and last maxBytes-maxBytes/2
// bytes joined by proc.TruncationMarker counting the bytes left out
// (maxBytes <= 0 means proc.DefaultMaxOutput). TotalBytes is the length
// of the redacted stream (the total Read reports), so the marker's count
// is the stream range [len(head), TotalBytes-len(tail)) that Read returns
// while the log still holds it. The cut points are moved off UTF-8
// sequences like proc.HeadTail's. It reads a log being written, a
// compacted log and the log of a writer that died alike.
func HeadTail(dir, name string, maxBytes int) (proc.Output, error) {
	if err := checkName(name); err != nil {
		return proc.Output{}, err
	}
	if maxBytes <= 0 {
		maxBytes = proc.DefaultMaxOutput
	}
	for range readAttempts {
		v, err := loadView(dir, name)
		if err != nil {
			return proc.Output{}, err
		}
		out, err := v.headTail(maxBytes)
		v.close()
		if errors.Is(err, errRetry) {
			continue
		}
		return out, err
	}
	return proc.Output{}, errs.New(errs.Unavailable, "joblog: %s kept changing during the read; try again", name)
}

// headTail is HeadTail on one snapshot of the layout.
func (v *view) headTail(maxBytes int) (proc.Output, error) {
	out := proc.Output{TotalBytes: v.total}
	if v.total == 0 {
		return out, nil
	}
	// The head comes from the stored run at offset 0 (the head file).
	var stored int64
	if len(v.pieces) > 0 && v.pieces[0].start == 0 {
		stored = v.pieces[0].end
	}
	if stored == v.total && v.total <= int64(maxBytes) {
		b, err := v.readExact(0, v.total)
		if err != nil {
			return proc.Output{}, err
		}
		out.Text = string(b)
		return out, nil
	}
	headEnd := min(int64(maxBytes/2), stored)
	head, err := v.readExact(0, headEnd)
	if err != nil {
		return proc.Output{}, err
	}
	from := max(v.total-int64(maxBytes-maxBytes/2), headEnd, v.runStart())
	tail, err := v.readExact(from, v.total)
	if err != nil {
		return proc.Output{}, err
	}
	head = head[:utf8Cut(head)]
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	dropped := v.total - int64(len(head)+len(tail))
	if dropped == 0 {
		out.Text = string(head) + string(tail)
		return out, nil
	}
	marker := proc.TruncationMarker(dropped)
	b := make([]byte, 0, len(head)+len(marker)+len(tail))
	b = append(append(append(b, head...), marker...), tail...)
	out.Text, out.Truncated = string(b), true
	return out, nil
}

// utf8Cut returns the length of the longest prefix of b that does not end
// in an incomplete UTF-8 sequence (as proc.HeadTail cuts its head).
func utf8Cut(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if !utf8.RuneStart(c) {
			continue
		}
		if c < utf8.RuneSelf || utf8.FullRune(b[len(b)-i:]) {
			return len(b)
		}
		return len(b) - i
	}
	return len(b)
}
