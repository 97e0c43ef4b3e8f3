package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/baton-run/baton/toolcallback"
)

// PlaylistArgs are prepare_playlist's arguments.
type PlaylistArgs struct {
	Mood  string `json:"mood,omitempty" jsonschema:"the playlist's mood, e.g. calm or upbeat"`
	Songs int    `json:"songs,omitempty" jsonschema:"how many songs, 1 to 20; 10 when not said"`
}

// Playlist is prepare_playlist's result.
type Playlist struct {
	Mood   string   `json:"mood"`
	Tracks []string `json:"tracks"`
}

// PlaylistProgress is what prepare_playlist reports while it works: the
// page shows it in the call's card.
type PlaylistProgress struct {
	Done  int    `json:"done"`
	Of    int    `json:"of"`
	Track string `json:"track"` // the song just picked
}

// PlaylistStep is how long prepare_playlist takes per song: ten songs, the
// default, take half a minute, the length of work that would hold a
// request and a chat if it ran in the turn.
const PlaylistStep = 3 * time.Second

// PlaylistTool is the DJ's background tool, prepare_playlist: slow work
// that runs off the request on the queue, reports each song it picks, and
// resumes the agent with the playlist (docs/background.md).
func PlaylistTool() (*toolcallback.BackgroundTool, error) {
	return toolcallback.Background(toolcallback.BackgroundConfig{
		Name:        "prepare_playlist",
		Description: "Prepare a playlist of songs for a mood. It takes a while (a few seconds per song) and runs in the background; the user sees its progress.",
		Timeout:     10 * time.Minute,
	}, preparePlaylist)
}

var playlistWords = [][]string{
	{"Quiet", "Golden", "Blue", "Electric", "Slow", "Midnight", "Paper", "Bright"},
	{"Harbour", "Lanterns", "Rain", "Avenue", "Orbit", "Tides", "Garden", "Skyline"},
}

// preparePlaylist picks songs, one per PlaylistStep, reporting each; it
// stops when its call is cancelled (ctx ends). The same mood always gets
// the same songs.
func preparePlaylist(ctx context.Context, a PlaylistArgs) (Playlist, error) {
	songs := a.Songs
	if songs == 0 {
		songs = 10
	}
	if songs < 1 || songs > 20 {
		return Playlist{}, fmt.Errorf("a playlist has 1 to 20 songs, not %d", songs)
	}
	mood := strings.TrimSpace(strings.ToLower(a.Mood))
	if mood == "" {
		mood = "relaxed"
	}
	h := fnv.New32a()
	h.Write([]byte(mood))
	seed := int(h.Sum32() % 64)
	out := Playlist{Mood: mood}
	for i := range songs {
		select {
		case <-ctx.Done():
			return Playlist{}, ctx.Err()
		case <-time.After(PlaylistStep):
		}
		n := seed + 7*i
		track := playlistWords[0][n%8] + " " + playlistWords[1][(n/8+i)%8]
		out.Tracks = append(out.Tracks, track)
		if err := toolcallback.Progress(ctx, PlaylistProgress{Done: i + 1, Of: songs, Track: track}); err != nil {
			return Playlist{}, err
		}
	}
	return out, nil
}
