// Package dynamotest holds the DynamoDB adapters' unit-test helpers: fake
// clients that answer with canned errors and record what a store sent, and
// item round trips. It imports no adapter (the core's own tests use it), so
// it encodes with attributevalue as the core does; the core's only addition,
// flushing numbers below DynamoDB's range, never applies to the filled
// values (1.25).
package dynamotest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At is the time Filled sets every time.Time field to.
var At = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

// Filled returns a T with every exported field set (strings, numbers,
// bools, times, one-element slices and maps, pointers): a field an item
// struct forgets to store comes back zero and fails the round trip.
func Filled[T any](tb testing.TB) T {
	tb.Helper()
	var v T
	fill(reflect.ValueOf(&v).Elem(), "v")
	return v
}

func fill(v reflect.Value, name string) {
	if v.Type() == reflect.TypeOf(json.RawMessage{}) {
		// Raw JSON is stored as JSON: it must be some.
		v.SetBytes([]byte(`{"k":"s-` + name + `"}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + name)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(At))
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(v.Field(i), f.Name)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), name)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), name)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, name)
		m.SetMapIndex(reflect.ValueOf("k-"+name), e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf("i-" + name))
	}
}

// RoundTrip marshals an item struct to what DynamoDB stores and back.
func RoundTrip[I any](t *testing.T, it I) I {
	t.Helper()
	m, err := attributevalue.MarshalMap(it)
	require.NoError(t, err)
	for k, av := range m {
		_, isString := av.(*types.AttributeValueMemberS)
		assert.False(t, isString && len(k) > 3 && k[len(k)-3:] == "doc", "no JSON documents: %s", k)
	}
	var back I
	require.NoError(t, attributevalue.UnmarshalMap(m, &back))
	return back
}
