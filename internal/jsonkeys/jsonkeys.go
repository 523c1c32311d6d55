// Package jsonkeys checks the keys of JSON objects, which encoding/json lets
// pass: decoding into a struct, it keeps the last of a repeated key without
// a word, and it fills a field from a key that matches the field's name in
// any case ("Problem" for "problem", "TYPES" for "types").
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// KeyError reports a key refused in the object at Path.
type KeyError struct {
	// Path is the object's JSON path: "" for the top level, then keys
	// joined by dots and indices in brackets ("problem.jobs[0]"), a key
	// other than a letter or underscore followed by letters, digits and
	// underscores being quoted in brackets (`["('A', 1)"]`).
	Path string
	Key  string // the key refused
	// Other is the earlier key of the object that Key repeats, or, for a
	// Variant, the name Key is a case variant of.
	Other string
	// Variant reports a key that is not a name but matches one in another
	// case; otherwise Key repeats Other, in the same case or another.
	Variant bool
}

// Error names the object, the key and what is wrong with it.
func (e *KeyError) Error() string {
	at := ""
	if e.Path != "" {
		at = e.Path + ": "
	}
	switch {
	case e.Variant:
		return fmt.Sprintf("%skey %q is not %q (keys must match in case)", at, e.Key, e.Other)
	case e.Key != e.Other:
		return fmt.Sprintf("%skey %q listed twice (as %q)", at, e.Key, e.Other)
	}
	return fmt.Sprintf("%skey %q listed twice", at, e.Key)
}

// Check reads the first JSON value in b, which must be valid JSON, and
// returns a *KeyError for the first key, in document order, that repeats an
// earlier key of its object, the two compared case-folded as encoding/json
// matches a key to a struct field (Fold); or, if names are given, that is
// not one of them but matches one case-folded. It returns encoding/json's
// error if b does not begin with valid JSON.
//
// Check suits objects decoded into structs; the keys of an object decoded
// into a map are distinct unless equal byte for byte.
func Check(b []byte, names ...string) error {
	folded := make(map[string]string, len(names))
	for _, n := range names {
		folded[Fold(n)] = n
	}
	return check(json.NewDecoder(bytes.NewReader(b)), folded, "", Fold)
}

// CheckRepeats reads the first JSON value in b, which must be valid JSON,
// and returns a *KeyError for the first key, in document order, that
// repeats an earlier key of its object byte for byte. It suits documents
// whose objects are decoded into maps as well as structs, such as those a
// program wrote itself with encoding/json: there a repeat can only be an
// edit. It returns encoding/json's error if b does not begin with valid
// JSON.
func CheckRepeats(b []byte) error {
	return check(json.NewDecoder(bytes.NewReader(b)), nil, "", func(key string) string { return key })
}

// check reads one value from dec and checks its keys, compared as same
// makes them; names maps a folded name to the name, and path is the
// value's.
func check(dec *json.Decoder, names map[string]string, path string, same func(string) string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]string{} // folded key → the key
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string) // an object's keys are strings, in valid JSON
			fold := same(key)
			if k, dup := seen[fold]; dup {
				return &KeyError{Path: path, Key: key, Other: k}
			}
			if n, ok := names[fold]; ok && n != key {
				return &KeyError{Path: path, Key: key, Other: n, Variant: true}
			}
			seen[fold] = key
			if err := check(dec, names, join(path, key), same); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := check(dec, names, fmt.Sprintf("%s[%d]", path, i), same); err != nil {
				return err
			}
		}
	default:
		return nil // a scalar
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// join returns the path of key in the object at path.
func join(path, key string) string {
	for i, r := range key {
		if r != '_' && !unicode.IsLetter(r) && (i == 0 || !unicode.IsDigit(r)) {
			return path + "[" + strconv.Quote(key) + "]"
		}
	}
	if key == "" {
		return path + `[""]`
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// Fold returns key case-folded as encoding/json compares a key with a
// struct field's name: two keys match if their folds are equal. ASCII
// letters are upper-cased and every other rune replaced by the smallest of
// its Unicode simple-fold orbit, so "k", "K" and the Kelvin sign 'K' match.
func Fold(key string) string {
	out := make([]byte, 0, len(key))
	for _, r := range key {
		if r < utf8.RuneSelf {
			out = append(out, byte(unicode.ToUpper(r)))
			continue
		}
		for {
			next := unicode.SimpleFold(r)
			if next <= r {
				r = next
				break
			}
			r = next
		}
		out = utf8.AppendRune(out, r)
	}
	return string(out)
}
