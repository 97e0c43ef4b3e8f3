package a2ui_test

import (
	"fmt"

	"github.com/baton-run/baton/a2ui"
)

func ExampleBasicCatalog() {
	catalog, err := a2ui.BasicCatalog()
	if err != nil {
		panic(err)
	}
	var shown a2ui.Surfaces
	msgs, err := catalog.Decode([]byte(`[
		{"version": "v0.9", "createSurface": {"surfaceId": "hello", "catalogId": "`+a2ui.BasicCatalogID+`"}},
		{"version": "v0.9", "updateComponents": {"surfaceId": "hello", "components": [
			{"id": "root", "component": "Button", "child": "label"},
			{"id": "label", "component": "Text", "text": "Hi"}]}}]`), &shown)
	fmt.Println(len(msgs), err)

	msgs, _ = catalog.Decode([]byte(`[
		{"version": "v0.9", "createSurface": {"surfaceId": "hello", "catalogId": "`+a2ui.BasicCatalogID+`"}},
		{"version": "v0.9", "updateComponents": {"surfaceId": "hello", "components": [
			{"id": "root", "component": "Text", "text": "Hello"}]}}]`), &shown)
	_ = shown.Apply(msgs...)
	sf, _ := shown.Surface("hello")
	fmt.Println(sf.Text())
	// Output:
	// 0 messages[1].updateComponents.components[0]: Button "root": action missing
	// Hello
}
