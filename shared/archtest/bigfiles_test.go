package archtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxTrackedBytes bounds a file the repository tracks: data a benchmark
// reads is carried compact (localstack/bench/routing/clinc150), build
// outputs and downloads are not carried at all.
const maxTrackedBytes = 2 << 20

// No file git tracks is over maxTrackedBytes.
func TestNoTrackedFileIsOver2MB(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	require.NoError(t, err, "git ls-files")
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	require.NotEmpty(t, files)
	for _, f := range files {
		info, err := os.Stat(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree, not yet in the index
		}
		require.NoError(t, err, f)
		assert.LessOrEqual(t, info.Size(), int64(maxTrackedBytes), "%s is %d bytes", f, info.Size())
	}
}
