// Package textsafe escapes text an agent supplied (an argv, a path, a
// goal, a note, a reason) before a person reads it in a terminal, a web
// page or an MCP client's dialog, so that what the person reads is what
// runs.
//
// An agent's string may carry a carriage return that hides what came
// before it ("ls\rrm -rf ~" reads "rm -rf ~" in a terminal, and the other
// way round), an escape sequence (colours, cursor moves, OSC 8 hyperlinks,
// OSC 52 clipboard writes), a bidi override that shows the text in
// another order (U+202E), zero-width and other invisible format
// characters, or a line break that prints a line looking like the
// surrounding output ("\nOperation: ls"). Every such character is made
// visible as an escape:
//
//	\\            a backslash (so that an escape in the output is always one)
//	\t \n \r      tab, line feed, carriage return
//	\xHH          another C0 control or DEL (\x1b is ESC), or a byte that
//	              is not UTF-8 (\x9b)
//	\uHHHH        a C1 control (\u009b), a format character (bidi controls
//	              \u202a-\u202e, \u2066-\u2069, \u200e, \u200f, \u061c,
//	              zero-width characters, \ufeff, \u00ad), \u2028, \u2029
//	\UHHHHHHHH    a format character beyond U+FFFF (the tag characters)
//
// The escaping is unambiguous: the input can be read back from the
// output, so a literal `\r` typed by the agent ("\\r") and a carriage
// return ("\r") look different. Text free of those characters and of
// backslashes comes back unchanged, without an allocation.
//
// Line is for one-line places (table cells, one-line fields); Text keeps
// line breaks and tabs for places that frame the text themselves (an HTML
// <pre>); Block prefixes every line so that none can pass for a line of
// the surrounding output; JSON escapes JSON text (an approval's exact
// input) the JSON way, so it stays valid JSON with the same meaning; Argv
// shows an argv as a shell reads it back.
package textsafe
