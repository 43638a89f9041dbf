package ingest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogtest"
)

func TestScratchLayout(t *testing.T) {
	dir := t.TempDir()
	catalogtest.BuildSynthetic(t, dir, 20000, 10)
	name, _ := catalog.ReadPointer(dir, catalog.CurrentFile)
	out, _ := exec.Command("ls", "-la", catalog.VersionPath(dir, name)).CombinedOutput()
	t.Logf("%s", out)
	_ = os.Stdout
}
