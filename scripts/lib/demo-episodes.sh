# Shared by the demos (source it): three synthesised "episodes" (intro, episode1, episode2 as
# 44.1 kHz WAV) and items.csv with their media items, a time-ranged quiz item among them.
source "$(dirname "${BASH_SOURCE[0]}")/synth-music.sh"

demo_episodes() {
  echo "demo: synthesising three episodes with sox…"
  synth_piece intro 11 90 44100; synth_piece episode1 22 90 44100; synth_piece episode2 33 90 44100
  cat > items.csv <<'CSV'
file,id,title,artist,timeRanges,custom.question
intro.wav,intro,Show Intro,Earshot Demo,,
episode1.wav,ep1,Episode 1,Earshot Demo,,
episode2.wav,ep2,Episode 2,Earshot Demo,,
episode2.wav,ep2-quiz,Quiz question,Earshot Demo,5-15,"{""text"": ""What is 6 × 7?"", ""answer"": 42}"
CSV
}
