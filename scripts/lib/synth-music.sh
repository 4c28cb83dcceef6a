# Shared by the demos and the test script (source it): synthesise a deterministic piece of
# plucked notes with sox — no audio files in the repository, the same audio every run.
#
#   synth_piece NAME SEED NOTES RATE   # writes NAME.wav in the current folder
synth_piece() {
  local name=$1 seed=$2 count=$3 rate=$4 parts=() i n m
  local notes=(A2 C3 D3 E3 G3 A3 C4 D4 E4 G4 A4 C5 D5 E5)
  RANDOM=$seed
  for i in $(seq 1 "$count"); do
    n=${notes[$((RANDOM % ${#notes[@]}))]}
    m=${notes[$((RANDOM % ${#notes[@]}))]}
    sox -q -n -r "$rate" -c 1 "$name-part$i.wav" synth "0.$((15 + RANDOM % 30))" pluck "$n" pluck mix "$m" vol 0.8
    parts+=("$name-part$i.wav")
  done
  sox -q "${parts[@]}" "$name.wav"
  rm -f "$name"-part*.wav
}
