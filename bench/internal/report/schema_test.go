package report

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/locksmith-go/locksmith/bench/internal/workload"
)

func TestSchemaRequiresExactlyTheRecordFieldsThatAreNeverOmitted(t *testing.T) {
	var schema struct {
		Properties struct {
			Records struct {
				Items struct {
					Required   []string                  `json:"required"`
					Properties map[string]map[string]any `json:"properties"`
				} `json:"items"`
			} `json:"records"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema, &schema); err != nil {
		t.Fatal(err)
	}
	items := schema.Properties.Records.Items
	var always, all []string
	rt := reflect.TypeOf(workload.Record{})
	for i := 0; i < rt.NumField(); i++ {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		all = append(all, name)
		if opts != "omitempty" {
			always = append(always, name)
		}
	}
	sort.Strings(always)
	req := append([]string(nil), items.Required...)
	sort.Strings(req)
	if !reflect.DeepEqual(req, always) {
		t.Fatalf("schema requires %v,\nRecord always writes %v", req, always)
	}
	if len(items.Properties) != len(all) {
		t.Fatalf("schema describes %d record properties, Record has %d fields", len(items.Properties), len(all))
	}
	for _, name := range []string{"workload", "library", "goroutines", "keys", "ops_per_sec", "p50_us", "p99_us",
		"p999_us", "max_us", "violations", "lost", "goroutines_peak", "heap_bytes_per_lock", "renew_cmds_per_sec",
		"client_cpu", "server_cpu"} {
		if _, ok := items.Properties[name]; !ok || !contains(req, name) {
			t.Errorf("field %q, which every report must carry, is not required by the schema", name)
		}
	}
}

func TestValidateAcceptsAWrittenReportAndRejectsBrokenOnes(t *testing.T) {
	good, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(good); err != nil {
		t.Fatalf("a report written by this package fails: %v", err)
	}
	var doc map[string]any
	_ = json.Unmarshal(good, &doc)
	rec := doc["records"].([]any)[0].(map[string]any)
	delete(rec, "p99_us")
	rec["goroutines"] = 1.5
	doc["ceiling"].(map[string]any)["pairs_per_sec"] = "fast"
	bad, _ := json.Marshal(doc)
	err = Validate(bad)
	if err == nil {
		t.Fatal("a broken report passed")
	}
	for _, want := range []string{`missing "p99_us"`, "$.records[0].goroutines: number, want integer",
		"$.ceiling.pairs_per_sec: string"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
