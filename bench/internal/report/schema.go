package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Schema is the JSON Schema (draft 2020-12) of the document WriteJSON writes:
// report.schema.json in this directory.
//
//go:embed report.schema.json
var Schema []byte

// Validate checks a JSON report against Schema. It implements the part of
// JSON Schema the schema uses (type, required, properties, items) and
// returns every violation found, joined, or nil.
func Validate(doc []byte) error {
	var schema, v any
	if err := json.Unmarshal(Schema, &schema); err != nil {
		return fmt.Errorf("report: the embedded schema is not JSON: %w", err)
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("report: not JSON: %w", err)
	}
	var problems []string
	validate(schema.(map[string]any), v, "$", &problems)
	if len(problems) > 0 {
		if len(problems) > 20 {
			problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
		}
		return fmt.Errorf("report: the document does not match the schema:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

func validate(s map[string]any, v any, path string, problems *[]string) {
	if t, ok := s["type"]; ok && !typeMatches(t, v) {
		*problems = append(*problems, fmt.Sprintf("%s: %s, want %v", path, jsonType(v), t))
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if req, ok := s["required"].([]any); ok {
			for _, k := range req {
				if _, present := x[k.(string)]; !present {
					*problems = append(*problems, fmt.Sprintf("%s: missing %q", path, k))
				}
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if sub, present := x[k]; present {
					validate(props[k].(map[string]any), sub, path+"."+k, problems)
				}
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				validate(items, e, fmt.Sprintf("%s[%d]", path, i), problems)
			}
		}
	}
}

func typeMatches(t any, v any) bool {
	switch tt := t.(type) {
	case string:
		return oneType(tt, v)
	case []any:
		for _, e := range tt {
			if s, ok := e.(string); ok && oneType(s, v) {
				return true
			}
		}
	}
	return false
}

func oneType(t string, v any) bool {
	switch t {
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	default:
		return jsonType(v) == t
	}
}

func jsonType(v any) string {
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
