package resp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestServerErrorPrefix(t *testing.T) {
	cases := []struct{ msg, prefix string }{
		{"NOSCRIPT No matching script. Please use EVAL.", "NOSCRIPT"},
		{"MOVED 3999 127.0.0.1:6381", "MOVED"},
		{"ASK 3999 127.0.0.1:6381", "ASK"},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE"},
		{"LOADING Redis is loading the dataset in memory", "LOADING"},
		{"ERR unknown command 'FOO'", "ERR"},
		{"ERR", "ERR"},
		{"CLUSTERDOWN The cluster is down", "CLUSTERDOWN"},
		{"NOPERM_X2 made up", "NOPERM_X2"},
		{"Error running script", ""},
		{"err lower case", ""},
		{"1ERR starts with a digit", ""},
		{"", ""},
		{" ERR leading space", ""},
	}
	for _, tc := range cases {
		e := NewServerError(tc.msg)
		if e.Prefix != tc.prefix || e.Message != tc.msg {
			t.Errorf("NewServerError(%q) = {%q, %q}, want prefix %q", tc.msg, e.Prefix, e.Message, tc.prefix)
		}
	}
}

func TestErrorReplyIsAServerErrorReachableWithAs(t *testing.T) {
	var d Decoder
	v, _, err := d.Decode([]byte("-NOSCRIPT No matching script. Please use EVAL.\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	wrapped := fmt.Errorf("evalsha: %w", v.Err())
	var se *ServerError
	if !errors.As(wrapped, &se) || se.Prefix != "NOSCRIPT" {
		t.Fatalf("errors.As did not find the NOSCRIPT ServerError in %v", wrapped)
	}
	if se.Error() != "redis: NOSCRIPT No matching script. Please use EVAL." {
		t.Errorf("Error() = %q", se.Error())
	}
	var pe *ProtocolError
	if errors.As(wrapped, &pe) {
		t.Error("a server error reply matched *ProtocolError")
	}
	if _, err := v.AsInt64(); !errors.As(err, &se) {
		t.Errorf("AsInt64 of an error reply = %v, want the *ServerError", err)
	}
	if _, err := v.AsString(); !errors.As(err, &se) {
		t.Errorf("AsString of an error reply = %v, want the *ServerError", err)
	}
	for _, ok := range []Value{simple("OK"), integer(1), bulk("x"), nullBulk, arr()} {
		if ok.Err() != nil {
			t.Errorf("Err() of %v = %v, want nil", ok, ok.Err())
		}
	}
}

func TestAsInt64(t *testing.T) {
	cases := []struct {
		v       Value
		want    int64
		wantErr string // "" for success, "nil" for ErrNil, "type" for *TypeError
	}{
		{integer(42), 42, ""},
		{integer(-9223372036854775808), -9223372036854775808, ""},
		{bulk("30000"), 30000, ""},
		{bulk("-5"), -5, ""},
		{nullBulk, 0, "nil"},
		{nullArray, 0, "nil"},
		{bulk("12a"), 0, "type"},
		{bulk(""), 0, "type"},
		{bulk("99999999999999999999"), 0, "type"},
		{simple("OK"), 0, "type"},
		{arr(integer(1)), 0, "type"},
	}
	for _, tc := range cases {
		got, err := tc.v.AsInt64()
		checkAsErr(t, "AsInt64", tc.v, err, tc.wantErr, "int64")
		if tc.wantErr == "" && got != tc.want {
			t.Errorf("AsInt64(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}

func TestAsString(t *testing.T) {
	cases := []struct {
		v       Value
		want    string
		wantErr string
	}{
		{simple("OK"), "OK", ""},
		{bulk("a\r\nb"), "a\r\nb", ""},
		{bulk(""), "", ""},
		{nullBulk, "", "nil"},
		{nullArray, "", "nil"},
		{integer(1), "", "type"},
		{arr(bulk("x")), "", "type"},
	}
	for _, tc := range cases {
		got, err := tc.v.AsString()
		checkAsErr(t, "AsString", tc.v, err, tc.wantErr, "string")
		if tc.wantErr == "" && got != tc.want {
			t.Errorf("AsString(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func checkAsErr(t *testing.T, op string, v Value, err error, want, goType string) {
	t.Helper()
	switch want {
	case "":
		if err != nil {
			t.Errorf("%s(%v) error = %v", op, v, err)
		}
	case "nil":
		if !errors.Is(err, ErrNil) {
			t.Errorf("%s(%v) error = %v, want ErrNil", op, v, err)
		}
	case "type":
		var te *TypeError
		if !errors.As(err, &te) || te.Got != v.Type || te.Want != goType {
			t.Errorf("%s(%v) error = %v, want *TypeError{Want: %s, Got: %v}", op, v, err, goType, v.Type)
		} else if !strings.Contains(te.Error(), v.Type.String()) {
			t.Errorf("TypeError message %q does not name the type", te.Error())
		}
	}
}

func TestValueString(t *testing.T) {
	cases := []struct {
		v    Value
		want string
	}{
		{simple("OK"), "OK"},
		{errReply("ERR x"), "(error) ERR x"},
		{integer(1), "(integer) 1"},
		{bulk("a\nb"), `"a\nb"`},
		{nullBulk, "(nil)"},
		{nullArray, "(nil)"},
		{arr(), "[]"},
		{arr(bulk("message"), integer(2), arr(nullBulk)), `["message", (integer) 2, [(nil)]]`},
		{Value{Type: '_', Str: "x"}, `(unknown type "_") "x"`},
	}
	for _, tc := range cases {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
}

func TestTypeString(t *testing.T) {
	for typ, want := range map[Type]string{SimpleString: "simple string", ErrorReply: "error", Integer: "integer",
		BulkString: "bulk string", Array: "array", Type(0xff): `unknown type "\xff"`} {
		if got := typ.String(); got != want {
			t.Errorf("Type(%q).String() = %s, want %s", byte(typ), got, want)
		}
	}
}
