package config

// The strict YAML decoding: ${VAR} expansion that remembers which values
// came from the environment, duplicated and unknown keys refused with their
// key path and line, and error text that quotes a variable's name, never
// its value.

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// decoder decodes the config's YAML tree. refs holds, for each value that
// came from the environment, the references it was written with
// ("${TELEGRAM_BOT_TOKEN}"): an error about such a value quotes those, never
// the value, which is often a secret. env holds the same by key path, for
// Validate's errors.
type decoder struct {
	refs map[*yaml.Node]string
	env  map[string]envValue
	// lines holds the line of each key path's value, for Validate's errors.
	lines map[string]int
}

// envValue is a scalar expanded from the environment: its value and the
// references it was written with.
type envValue struct{ value, refs string }

// expandEnv replaces variable references in every scalar under n; path is
// n's key path, so that a malformed reference names its key. The check for
// malformed references looks at the text as written, before expansion: a
// variable's value may hold "${" itself, and is never quoted in an error.
func (d decoder) expandEnv(path string, n *yaml.Node, getenv func(string) string) error {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		if strings.Contains(envRef.ReplaceAllString(n.Value, ""), "${") {
			return fmt.Errorf("%s: malformed variable reference (line %d): a \"${\" without a closing \"}\", or a name other than letters, digits and _; write ${NAME} or ${NAME:-default}", orRoot(path), n.Line)
		}
		var names []string
		for _, m := range envRef.FindAllStringSubmatch(n.Value, -1) {
			names = append(names, "${"+m[1]+"}")
		}
		d.refs[n] = strings.Join(names, ", ")
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := envRef.FindStringSubmatch(ref)
			if v := getenv(m[1]); v != "" || m[2] == "" {
				return v
			}
			return m[3]
		})
		d.env[path] = envValue{value: n.Value, refs: d.refs[n]}
	}
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if n.Kind == yaml.MappingNode {
			if i%2 == 0 {
				continue // keys are not expanded
			}
			p = n.Content[i-1].Value
			if path != "" {
				p = path + "." + p
			}
		}
		if err := d.expandEnv(p, c, getenv); err != nil {
			return err
		}
	}
	return nil
}

// uniqueKeys refuses a mapping under n that has a key twice: YAML does not
// allow it, and the last one would silently win (uncommenting an example
// block below the keys it replaces, say).
func uniqueKeys(path string, n *yaml.Node) error {
	first := map[string]int{}
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		if n.Kind == yaml.MappingNode {
			if i%2 == 0 {
				key := c.Value
				if path != "" {
					key = path + "." + c.Value
				}
				if line, dup := first[c.Value]; dup {
					return fmt.Errorf("%s: duplicated key (line %d; first at line %d): a key may appear once in a mapping; remove or comment out one of them", key, c.Line, line)
				}
				first[c.Value] = c.Line
				continue
			}
			p = n.Content[i-1].Value
			if path != "" {
				p = path + "." + p
			}
		}
		if err := uniqueKeys(p, c); err != nil {
			return err
		}
	}
	return nil
}

// quote is a scalar's value for an error: quoted, or for one that came from
// the environment, the variables it came from.
func (d decoder) quote(n *yaml.Node) string {
	if refs, ok := d.refs[n]; ok {
		return "the value of " + refs
	}
	return strconv.Quote(n.Value)
}

var durationType = reflect.TypeOf(Duration(0))

// decodeNode decodes n into v, walking structs by their yaml tags so that an
// unknown key or a bad value is reported with its full key path.
func (d decoder) decodeNode(path string, n *yaml.Node, v reflect.Value) error {
	if path != "" && d.lines != nil {
		d.lines[path] = n.Line
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		return nil
	}
	switch {
	case v.Type() == durationType:
		dur, err := time.ParseDuration(n.Value)
		if err != nil || n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: %s is not a duration like 30s, 10m or 1h (line %d)", path, d.quote(n), n.Line)
		}
		v.SetInt(int64(dur))
		return nil
	case v.Kind() == reflect.Struct:
		return d.decodeStruct(path, n, v)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: want a list (line %d)", path, n.Line)
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.decodeNode(fmt.Sprintf("%s[%d]", path, i), c, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	src := n
	if _, fromEnv := d.refs[n]; fromEnv && n.Kind == yaml.ScalarNode && v.Kind() != reflect.String {
		// The text "${N}" was a string; what it expands to is typed as if
		// written plainly, so a variable can set a number or a boolean.
		plain := *n
		plain.Tag, plain.Style = "", 0
		src = &plain
	}
	if isInt(v.Kind()) && src.Kind == yaml.ScalarNode && src.ShortTag() == "!!float" {
		// yaml.v3 would cut the fraction off: 2.7 turns would be 2.
		if f, err := strconv.ParseFloat(src.Value, 64); err != nil || f != math.Trunc(f) {
			return fmt.Errorf("%s: %s (line %d)", path, d.describeType(v.Type(), n), n.Line)
		}
	}
	if err := src.Decode(v.Addr().Interface()); err != nil {
		msg := d.describeType(v.Type(), n)
		if _, fromEnv := d.refs[n]; !fromEnv && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
			plain := *n
			plain.Tag, plain.Style = "", 0
			if plain.Decode(reflect.New(v.Type()).Interface()) == nil {
				return fmt.Errorf("%s: %s but a quoted string (line %d); write it without quotes", path, msg, n.Line)
			}
		}
		return fmt.Errorf("%s: %s (line %d)", path, msg, n.Line)
	}
	return nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func (d decoder) decodeStruct(path string, n *yaml.Node, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: want a mapping of keys (line %d)", orRoot(path), n.Line)
	}
	names, fields := yamlFields(v.Type())
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		full := key
		if path != "" {
			full = path + "." + key
		}
		idx, ok := fields[key]
		if !ok {
			return fmt.Errorf("%s: unknown key (line %d); valid keys here: %s", full, n.Content[i].Line, strings.Join(names, ", "))
		}
		if err := d.decodeNode(full, n.Content[i+1], v.FieldByIndex(idx)); err != nil {
			return err
		}
	}
	return nil
}

// yamlFields are the keys of struct type t in order and the field index of
// each; the keys of a field tagged ",inline" are t's own.
func yamlFields(t reflect.Type) (names []string, fields map[string][]int) {
	fields = map[string][]int{}
	for f := 0; f < t.NumField(); f++ {
		if !t.Field(f).IsExported() {
			continue // not read from the file (Config.tokens)
		}
		name, opts, _ := strings.Cut(t.Field(f).Tag.Get("yaml"), ",")
		if opts == "inline" && t.Field(f).Type.Kind() == reflect.Struct {
			inner, innerFields := yamlFields(t.Field(f).Type)
			names = append(names, inner...)
			for k, idx := range innerFields {
				fields[k] = append([]int{f}, idx...)
			}
			continue
		}
		names = append(names, name)
		fields[name] = []int{f}
	}
	return names, fields
}

func orRoot(path string) string {
	if path == "" {
		return "config"
	}
	return path
}

func (d decoder) describeType(t reflect.Type, n *yaml.Node) string {
	got := map[yaml.Kind]string{yaml.MappingNode: "a mapping", yaml.SequenceNode: "a list"}[n.Kind]
	if n.Kind == yaml.ScalarNode {
		got = d.quote(n)
	}
	switch t.Kind() {
	case reflect.Bool:
		return got + " is not true or false"
	case reflect.Int:
		return got + " is not a whole number"
	case reflect.Float64:
		return got + " is not a number"
	case reflect.Slice:
		return "want a list of strings, got " + got
	case reflect.Map:
		return "want a mapping of key: glob, got " + got
	}
	return "want a string, got " + got
}

var quotedString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// redactEnv replaces in msg, an error about key, the values of key and of
// the keys under it that came from the environment: quoted or bare, with
// the variables they came from; a quoted part of one (a folder's segment)
// with what it is part of.
func redactEnv(key, msg string, env map[string]envValue) string {
	for path, e := range env {
		if e.value == "" || (path != key && !strings.HasPrefix(path, key+".") && !strings.HasPrefix(path, key+"[")) {
			continue
		}
		msg = strings.ReplaceAll(msg, strconv.Quote(e.value), "the value of "+e.refs)
		msg = strings.ReplaceAll(msg, e.value, e.refs)
		msg = quotedString.ReplaceAllStringFunc(msg, func(q string) string {
			if s, err := strconv.Unquote(q); err == nil && s != "" && strings.Contains(e.value, s) {
				return "a part of the value of " + e.refs
			}
			return q
		})
	}
	return msg
}
