package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// snakeMessage is a log message written as an identifier ("web_listening")
// rather than prose ("web chat listening").
var snakeMessage = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)+$`)

// TestLogCalls: every slog call (Debug, Info, Warn, Error on a logger) with
// a constant message uses prose, not an identifier, and no attribute key is
// one of the keys slog writes itself (msg, time, level, source): a JSON log
// line would carry that key twice, and readers keep only one of them.
func TestLogCalls(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			switch sel.Sel.Name {
			case "Debug", "Info", "Warn", "Error":
			default:
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			msg, _ := strconv.Unquote(lit.Value)
			pos := fset.Position(call.Pos())
			rel, _ := filepath.Rel(root, pos.Filename)
			if snakeMessage.MatchString(msg) {
				t.Errorf("%s:%d: log message %q is an identifier; write it as prose like the others", rel, pos.Line, msg)
			}
			for i := 1; i < len(call.Args); i += 2 {
				key, ok := call.Args[i].(*ast.BasicLit)
				if !ok || key.Kind != token.STRING {
					continue
				}
				switch k, _ := strconv.Unquote(key.Value); k {
				case "msg", "time", "level", "source":
					t.Errorf("%s:%d: log attribute key %q is one slog writes itself; name it for what it holds (msg_id)", rel, pos.Line, k)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
