package secrets

import "github.com/harnessd/harnessd/internal/redact"

// minSuspectToken is the shortest run of token bytes (letters, digits and
// _ - + / =) that Suspect takes for a credential when it mixes letters and
// digits.
const minSuspectToken = 12

// Suspect reports whether text, read from the file at path of a checkout
// whose history is not learned yet (Set.HistoryPending), may hold a value
// only the history knows to be secret (a value rotated out of a secret
// file and still written elsewhere): the rules of red find a secret in it,
// or it holds a run of at least 12 token bytes that mixes letters and
// digits (the shape of a generated credential). A read of text that is not
// suspect is answered with the values known so far (the work tree's, the
// index's and HEAD's); a suspect one waits for the history. A nil red
// applies no rules.
//
// What is not suspect and may still hold a value only the history names:
// a word, or a run shorter than 12 bytes or without a digit (or without a
// letter), outside any form the rules know.
func Suspect(red *redact.Redactor, path, text string) bool {
	if red != nil {
		if _, n := red.StringIn(path, text); n > 0 {
			return true
		}
	}
	return hasMixedToken(text, minSuspectToken)
}

// hasMixedToken reports whether s holds a run of at least min token bytes
// with a letter and a digit in it.
func hasMixedToken(s string, min int) bool {
	run, letter, digit := 0, false, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			switch {
			case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
				run, letter = run+1, true
				continue
			case '0' <= c && c <= '9':
				run, digit = run+1, true
				continue
			case c == '_' || c == '-' || c == '+' || c == '/' || c == '=':
				run++
				continue
			}
		}
		if run >= min && letter && digit {
			return true
		}
		run, letter, digit = 0, false, false
	}
	return false
}
