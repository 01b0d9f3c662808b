package pioneer

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// ReplyError codes, the same in every client (Python, Go, Rust, TypeScript).
const (
	ReplyInvalidArgument = "invalid_argument" // the caller's: an unknown provider, an empty turn id, a negative round
	ReplyNotJSON         = "not_json"         // the response is not JSON text, or not a JSON object
	ReplyErrorBody       = "error_body"       // the provider's error body, or a response that failed
	ReplyMissing         = "missing"          // a field the reply needs is absent or null
	ReplyWrongType       = "wrong_type"       // a field of another type than the API documents
	ReplyUnsupported     = "unsupported"      // a content kind or state that no entry can hold
	ReplyBadArguments    = "bad_arguments"    // tool call arguments that are not a JSON object
)

const maxCount = math.MaxInt32 // ProviderUsage's fields are int32

// ReplyError is a response EntriesOfResponse cannot turn into entries: Code (the
// Reply* constants) and Path, the place in the response it names
// ("choices[0].message.tool_calls[1].function.arguments"; "" for the whole).
type ReplyError struct {
	Code    string
	Path    string
	Message string
}

func (e *ReplyError) Error() string {
	if e.Path == "" {
		return "pioneer: " + e.Message
	}
	return fmt.Sprintf("pioneer: %s: %s", e.Path, e.Message)
}

// The readers below raise a *ReplyError by panicking with it; EntriesOfResponse
// recovers it and returns it (encoding/json reports its encoder's errors the same way).
func fail(code, path, format string, args ...any) {
	panic(&ReplyError{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

func child(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func parseResponse(response []byte) map[string]any {
	var value any
	if err := json.Unmarshal(response, &value); err != nil {
		fail(ReplyNotJSON, "", "the response is not JSON: %v", err)
	}
	body, ok := value.(map[string]any)
	if !ok {
		fail(ReplyNotJSON, "", "the response is a JSON %s, not an object", kindOf(value))
	}
	return body
}

func present(body map[string]any, key, path string, required bool) any {
	var v any
	if body != nil {
		v = body[key]
	}
	if v == nil && required {
		fail(ReplyMissing, child(path, key), "absent")
	}
	return v
}

func asObject(v any, path string) map[string]any {
	o, ok := v.(map[string]any)
	if !ok {
		fail(ReplyWrongType, path, "an object was expected, not a %s", kindOf(v))
	}
	return o
}

func asArray(v any, path string) []any {
	a, ok := v.([]any)
	if !ok {
		fail(ReplyWrongType, path, "an array was expected, not a %s", kindOf(v))
	}
	return a
}

func asText(v any, path string) string {
	s, ok := v.(string)
	if !ok {
		fail(ReplyWrongType, path, "a string was expected, not a %s", kindOf(v))
	}
	return s
}

func obj(body map[string]any, key, path string) map[string]any {
	return asObject(present(body, key, path, true), child(path, key))
}

// optObj is nil when the key is absent or null.
func optObj(body map[string]any, key, path string) map[string]any {
	v := present(body, key, path, false)
	if v == nil {
		return nil
	}
	return asObject(v, child(path, key))
}

func array(body map[string]any, key, path string) []any {
	return asArray(present(body, key, path, true), child(path, key))
}

func optArray(body map[string]any, key, path string) []any {
	v := present(body, key, path, false)
	if v == nil {
		return nil
	}
	return asArray(v, child(path, key))
}

func text(body map[string]any, key, path string) string {
	return asText(present(body, key, path, true), child(path, key))
}

// optText is "" when the key is absent or null (and when the string is empty).
func optText(body map[string]any, key, path string) string {
	v := present(body, key, path, false)
	if v == nil {
		return ""
	}
	return asText(v, child(path, key))
}

// name is a required string that must not be empty (an id, a tool name, a type).
func name(body map[string]any, key, path string) string {
	v := text(body, key, path)
	if v == "" {
		fail(ReplyMissing, child(path, key), "empty")
	}
	return v
}

func item(items []any, i int, path string) map[string]any {
	return asObject(items[i], index(path, i))
}

// count is a token count (a whole number from 0 to 2^31 - 1) or nil when absent.
func count(body map[string]any, key, path string) *int32 {
	v := present(body, key, path, false)
	if v == nil {
		return nil
	}
	n, ok := v.(float64)
	if !ok || n != math.Trunc(n) || n < 0 || n > maxCount {
		fail(ReplyWrongType, child(path, key), "a token count from 0 to %d was expected", maxCount)
	}
	c := int32(n)
	return &c
}

func checkedSum(path string, counts ...*int32) int32 {
	var total int64
	for _, c := range counts {
		if c != nil {
			total += int64(*c)
		}
	}
	if total > maxCount {
		fail(ReplyWrongType, path, "the counts add up past %d", maxCount)
	}
	return int32(total)
}

// argumentsText keeps arguments given as JSON text as they are, once known to be a JSON object ("" is none).
func argumentsText(v any, path string) string {
	if v == nil {
		fail(ReplyMissing, path, "absent")
	}
	s, ok := v.(string)
	if !ok {
		fail(ReplyWrongType, path, "a string was expected, not a %s", kindOf(v))
	}
	if strings.TrimSpace(s) != "" {
		var parsed any
		if err := json.Unmarshal([]byte(s), &parsed); err != nil {
			fail(ReplyBadArguments, path, "the arguments are not JSON: %v", err)
		}
		if _, isObject := parsed.(map[string]any); !isObject {
			fail(ReplyBadArguments, path, "the arguments are a JSON %s, not an object", kindOf(parsed))
		}
	}
	return s
}

// argumentsObject writes arguments given as a JSON object as canonical JSON text (CanonicalJSON).
func argumentsObject(v any, path string) string {
	if v == nil {
		fail(ReplyMissing, path, "absent")
	}
	if _, ok := v.(map[string]any); !ok {
		fail(ReplyBadArguments, path, "the arguments are a JSON %s, not an object", kindOf(v))
	}
	var b strings.Builder
	writeCanonical(&b, v, path)
	return b.String()
}

// CanonicalJSON writes a decoded JSON value (as encoding/json decodes into any) as
// every client writes it (RFC 8785's form): no spaces, keys sorted by UTF-16 code
// units, numbers as JavaScript writes doubles, strings escaping only what JSON must.
func CanonicalJSON(v any) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(*ReplyError)
			if !ok {
				panic(r)
			}
			err = re
		}
	}()
	var b strings.Builder
	writeCanonical(&b, v, "")
	return b.String(), nil
}

func writeCanonical(b *strings.Builder, v any, path string) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		b.WriteString(esNumber(x, path))
	case string:
		writeString(b, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sortUTF16(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k], child(path, k))
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, item, index(path, i))
		}
		b.WriteByte(']')
	default:
		fail(ReplyBadArguments, path, "a %T is not a JSON value", v)
	}
}

func sortUTF16(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		a, b := utf16.Encode([]rune(keys[i])), utf16.Encode([]rune(keys[j]))
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	})
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// esNumber is ECMAScript's Number::toString (what JSON.stringify writes) of a double.
func esNumber(x float64, path string) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		fail(ReplyBadArguments, path, "a number beyond a double's range")
	}
	if x == 0 {
		return "0"
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	// The shortest digits that read back as x, as d.ddde±x.
	mantissa, exp, _ := strings.Cut(strconv.FormatFloat(x, 'e', -1, 64), "e")
	whole, fraction, _ := strings.Cut(mantissa, ".")
	e, _ := strconv.Atoi(exp)
	digits := strings.TrimRight(whole+fraction, "0")
	n := len(whole) + e // x = 0.digits × 10^n (whole is one non-zero digit)
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	exponent := n - 1
	expSign := "+"
	if exponent < 0 {
		expSign, exponent = "-", -exponent
	}
	if k == 1 {
		return fmt.Sprintf("%s%se%s%d", sign, digits, expSign, exponent)
	}
	return fmt.Sprintf("%s%s.%se%s%d", sign, digits[:1], digits[1:], expSign, exponent)
}
