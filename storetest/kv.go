package storetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-agents/weft"
)

func testKV(t *testing.T, s weft.Store) {
	ctx := t.Context()
	a, b := newThread(t, s, nil), newThread(t, s, nil)
	vals := map[string]string{"obj": `{"x":[1,2,{"y":null}],"s":"é"}`, "str": `"text"`, "num": `42`}
	mustTx(t, s, a.ID, func(tx weft.Tx) error {
		for k, v := range vals {
			if err := tx.SetKV(k, json.RawMessage(v)); err != nil {
				return err
			}
		}
		return nil
	})
	mustTx(t, s, b.ID, func(tx weft.Tx) error { return tx.SetKV("obj", json.RawMessage(`"b's"`)) })
	for k, v := range vals {
		got, found, err := s.GetKV(ctx, a.ID, k)
		if err != nil || !found || !jsonEqual(got, []byte(v)) {
			t.Errorf("GetKV %s = %s %v %v, want %s", k, got, found, err, v)
		}
	}
	if got, _, _ := s.GetKV(ctx, b.ID, "obj"); !jsonEqual(got, []byte(`"b's"`)) {
		t.Errorf("thread b sees %s", got)
	}
	if _, found, _ := s.GetKV(ctx, b.ID, "num"); found {
		t.Error("thread b sees thread a's key")
	}
	mustTx(t, s, a.ID, func(tx weft.Tx) error { return tx.SetKV("num", nil) })
	if _, found, err := s.GetKV(ctx, a.ID, "num"); found || err != nil {
		t.Errorf("deleted key: found %v, %v", found, err)
	}
	all, err := s.ListKV(ctx, a.ID)
	if err != nil || len(all) != 2 || !jsonEqual(all["str"], []byte(`"text"`)) {
		t.Errorf("ListKV: %s %v", all, err)
	}
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error { return tx.SetKV("bad", json.RawMessage(`{`)) })
	wantCode(t, "invalid JSON value", err, weft.EInvalid)
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error { return tx.SetKV("", json.RawMessage(`1`)) })
	wantCode(t, "empty key", err, weft.EInvalid)
	err = s.Tx(ctx, a.ID, nil, func(tx weft.Tx) error { return tx.SetKV(strings.Repeat("k", 257), json.RawMessage(`1`)) })
	wantCode(t, "long key", err, weft.EInvalid)
}
