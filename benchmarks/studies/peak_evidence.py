#!/usr/bin/env python3
"""Peak survival and place evidence under noise and rooms: a numpy study, not the product.

Recreates Earshot's front end approximately (Hann STFT of 1024 at 16 kHz, hop 128; peaks are
maxima of ±5 frames × a frequency radius growing with frequency, 250 Hz–4 kHz; references keep
the 8 strongest per second plus 5 per band, queries 20 + 8) on excerpts of the benchmark corpus
(benchmarks/cache/decoded, made by `benchmarks/run.sh`), then measures:

1. survival: the share of a reference's selected peaks with a selected query peak within
   ±1 frame and ±15.6 Hz, and of its landmark pairs (anchor + next 2) with both ends, for the
   front end as it is and with other FFT sizes, radii and time neighbourhoods;
2. evidence at the right place against chance (the same query 2–3 s away along the
   reference, as `PeakVerification.chanceShifts`), in standard deviations, from
   - the query's selected peaks, and all its peaks (what `PeakVerification` reads),
   - the query's power at each reference peak over its bin's median (≥ 8×, best of ±1 frame
     and bin: "soft"), and
   - "evidence points": every 3 × 3 local maximum of the query's power at 8× its bin's median;
3. where the peaks are lost: the same survival with the query's peaks selected another way (by
   power over a floor estimated from its peaks), not selected at all, or picked with smaller
   neighbourhoods;
4. processing: the same survival with the query's power spectrum smoothed, stripped of an
   estimate of late reverberation, or of its stationary noise before picking (references as now),
   and with late reverberation removed on both sides (references picked from processed power);
5. selection: the same survival with references selecting the peaks that survived three other
   degradations of their own audio (the product's references are selected by power alone).

    python3 benchmarks/studies/peak_evidence.py [clips] [survival] [loss] [evidence] [processing] [selection]
    # 30 clips, every table: about 25 minutes; name tables to run only those

What the tables answer: benchmarks/studies/peak-picking-in-rooms.md and evidence-points.md.
"""
import glob
import sys

import numpy as np
from scipy.ndimage import convolve1d, maximum_filter, uniform_filter1d
from scipy.signal import fftconvolve

SR = 16000
rng = np.random.default_rng(1)
FILES = sorted(glob.glob('benchmarks/cache/decoded/*.f32'))


def excerpts(n, seconds):
    out = []
    while len(out) < n:
        x = np.fromfile(FILES[rng.integers(len(FILES))], dtype=np.float32)
        length = int(seconds * SR)
        if len(x) < length + SR:
            continue
        start = rng.integers(0, len(x) - length)
        e = x[start:start + length].astype(np.float64)
        if np.sqrt(np.mean(e ** 2)) >= 1e-3:
            out.append(e)
    return out


def noise(kind, n):
    w = rng.standard_normal(n)
    if kind == 'white':
        return w
    spectrum = np.fft.rfft(w)
    f = np.arange(len(spectrum), dtype=np.float64)
    f[0] = 1
    return np.fft.irfft(spectrum / np.sqrt(f), n)  # pink: power ∝ 1/f


def at_snr(x, n, snr_db):
    return x + n * np.sqrt(np.mean(x ** 2) / np.mean(n ** 2) / 10 ** (snr_db / 10))


def room(x, rt60):
    t = np.arange(int(rt60 * 1.2 * SR)) / SR
    ir = rng.standard_normal(len(t)) * np.exp(-6.9 * t / rt60)
    ir[0] = 8.0  # the direct sound
    y = fftconvolve(x, ir)[:len(x)]
    return y * np.sqrt(np.mean(x ** 2) / np.mean(y ** 2))


DEGRADATIONS = {
    'white noise 0 dB': lambda x: at_snr(x, noise('white', len(x)), 0),
    'pink noise -5 dB': lambda x: at_snr(x, noise('pink', len(x)), -5),
    'room RT60 0.8 s + noise 5 dB': lambda x: at_snr(room(x, 0.8), noise('white', len(x)), 5),
}


class FrontEnd:
    def __init__(self, fft=1024, hop=128, radius_scale=1.0, frame_radius=5, reference=(8, 5), query=(20, 8), process=None):
        self.fft, self.hop, self.frame_radius = fft, hop, frame_radius
        self.process = process  # applied to the power spectrum (frames × bins) before picking
        self.reference, self.query = reference, query
        self.hz = SR / fft
        self.lo, self.hi = int(round(250 / self.hz)), int(round(4000 / self.hz))
        # (first frequency, radius) in Hz, as FingerprintParameters.peakBinRadii at 15.625 Hz bins
        self.regions = [(b * 15.625, r * 15.625 * radius_scale) for b, r in [(16, 4), (32, 7), (56, 12), (96, 20), (160, 32)]]

    def power(self, x):
        window = np.hanning(self.fft + 1)[:-1]
        frames = 1 + (len(x) - self.fft) // self.hop
        index = np.arange(self.fft)[None, :] + self.hop * np.arange(frames)[:, None]
        p = np.abs(np.fft.rfft(x[index] * window, axis=1)) ** 2
        return self.process(p) if self.process else p

    def candidates(self, x):
        """Every peak the picker finds, before selection: frame and bin indices, log power."""
        p = self.power(x)
        keep = np.zeros(p.shape, dtype=bool)
        for i, (f0, radius) in enumerate(self.regions):
            f1 = self.regions[i + 1][0] if i + 1 < len(self.regions) else 4000
            r = max(1, int(round(radius / self.hz)))
            m = maximum_filter(p, size=(2 * self.frame_radius + 1, 2 * r + 1), mode='constant', cval=0)
            b0, b1 = int(round(f0 / self.hz)), int(round(f1 / self.hz))
            keep[:, b0:b1] |= (p[:, b0:b1] >= m[:, b0:b1]) & (p[:, b0:b1] > 1e-10)
        keep[:, :self.lo] = False
        keep[:, self.hi:] = False
        t, b = np.nonzero(keep)
        return t, b, np.log(p[t, b])

    def select(self, t, b, strength, rule):
        """The peaks `rule` keeps, ranked by `strength`: (seconds, Hz)."""
        hz = b * self.hz
        band = np.where(hz < 625, 0, np.where(hz < 1594, 1, 2))
        half = 0.5 * SR / self.hop
        allowed, allowed_in_band = rule
        selected = np.zeros(len(t), dtype=bool)
        lo = hi = 0
        for i in range(len(t)):  # stronger peaks within ±0.5 s, overall and in the band (PeakSelection)
            while t[lo] < t[i] - half:
                lo += 1
            while hi < len(t) and t[hi] <= t[i] + half:
                hi += 1
            j = np.arange(lo, hi)
            stronger = (strength[lo:hi] > strength[i]) | ((strength[lo:hi] == strength[i]) & (j < i))
            selected[i] = stronger.sum() < allowed or (stronger & (band[lo:hi] == band[i])).sum() < allowed_in_band
        return t[selected] * self.hop / SR, hz[selected]

    def peaks(self, x, rule):
        """Selected peaks: (seconds, Hz)."""
        t, b, strength = self.candidates(x)
        return self.select(t, b, strength, rule)


def found(rt, rf, qt, qf, frame, hz):
    hit = np.zeros(len(rt), dtype=bool)
    for i in range(len(rt)):
        near = np.abs(qt - rt[i]) <= frame + 1e-9
        hit[i] = np.any(np.abs(qf[near] - rf[i]) <= hz + 1e-9)
    return hit


def survival(rt, rf, qt, qf):
    """Reference peaks and landmark pairs (anchor + next 2 targets, LandmarkHasher's zone) with
    a query peak at both ends: (peaks, found, pairs, both found)."""
    hit = found(rt, rf, qt, qf, 0.008, 15.625)
    pairs = both = 0
    for i in range(len(rt)):
        k = 0
        for j in range(i + 1, len(rt)):
            if rt[j] - rt[i] > 0.512:
                break
            if not (2 * 15.625 <= abs(rf[j] - rf[i]) <= 63 * 15.625) or rt[j] - rt[i] < 0.016:
                continue
            pairs += 1
            both += hit[i] and hit[j]
            k += 1
            if k == 2:
                break
    return len(rt), hit.sum(), pairs, both


def survival_table(clips, degraded):
    variants = {
        'FFT 1024 (as now)': FrontEnd(),
        'FFT 2048': FrontEnd(fft=2048),
        'FFT 2048, half the radii in Hz': FrontEnd(fft=2048, radius_scale=0.5),
        'FFT 1024, ±3 frames': FrontEnd(frame_radius=3),
        'FFT 512': FrontEnd(fft=512),
    }
    print('| front end | ' + ' | '.join(DEGRADATIONS) + ' |')
    print('|---|' + '---|' * len(DEGRADATIONS))
    for name, fe in variants.items():
        cells = []
        for d in DEGRADATIONS:
            total = np.zeros(4)
            for x, y in zip(clips, degraded[d]):
                rt, rf = fe.peaks(x, fe.reference)
                qt, qf = fe.peaks(y, fe.query)
                total += survival(rt, rf, qt, qf)
            cells.append('peaks %.0f %%, pairs %.0f %%' % (100 * total[1] / total[0], 100 * total[3] / max(1, total[2])))
        print('| %s | %s |' % (name, ' | '.join(cells)), flush=True)


def band_floor(b, strength, groups=12):
    """Per peak, the median log power of the query's peaks in its part of the band (12
    log-spaced groups of bins, interpolated): a noise floor estimated from the peaks alone."""
    edges = np.geomspace(16, 256, groups + 1)
    centres = np.sqrt(edges[:-1] * edges[1:])
    levels = np.full(groups, np.nan)
    for g in range(groups):
        inside = (b >= edges[g]) & (b < edges[g + 1])
        if inside.sum() >= 5:
            levels[g] = np.median(strength[inside])
    known = ~np.isnan(levels)
    if not known.any():
        return np.zeros_like(strength)
    return np.interp(np.log(b), np.log(centres[known]), levels[known])


def loss_table(clips, degraded):
    """Where a reference's selected peaks are lost: in the query's selection or in its picking.
    References are picked and selected as now; queries are selected another way, or not at all,
    or picked with smaller neighbourhoods."""
    now = FrontEnd()
    finer, finest = FrontEnd(radius_scale=0.5, frame_radius=3), FrontEnd(radius_scale=0.25, frame_radius=2)
    variants = {
        'selected by power, 20 + 8 per second (as now)': (now, lambda t, b, s: now.select(t, b, s, now.query)),
        'selected by power over a floor from the peaks, 20 + 8': (now, lambda t, b, s: now.select(t, b, s - band_floor(b, s), now.query)),
        'not selected (every peak picked)': (now, lambda t, b, s: (t * now.hop / SR, b * now.hz)),
        'half the radii, ±3 frames, 20 + 8': (finer, lambda t, b, s: finer.select(t, b, s, now.query)),
        'half the radii, ±3 frames, every peak': (finer, lambda t, b, s: (t * finer.hop / SR, b * finer.hz)),
        'a quarter of the radii, ±2 frames, every peak': (finest, lambda t, b, s: (t * finest.hop / SR, b * finest.hz)),
    }
    references = [now.peaks(x, now.reference) for x in clips]
    print('| query peaks | ' + ' | '.join(DEGRADATIONS) + ' | clean |')
    print('|---|' + '---|' * (len(DEGRADATIONS) + 1))
    for name, (fe, choose) in variants.items():
        cells = []
        for d in list(DEGRADATIONS) + ['clean']:
            total, points = np.zeros(4), 0
            for (rt, rf), y in zip(references, degraded.get(d, clips)):
                qt, qf = choose(*fe.candidates(y))
                total += survival(rt, rf, qt, qf)
                points += len(qt)
            cells.append('peaks %.0f %%, pairs %.0f %% (%.0f/s)' % (100 * total[1] / total[0], 100 * total[3] / max(1, total[2]),
                                                                    points / (10.0 * len(clips))))
        print('| %s | %s |' % (name, ' | '.join(cells)), flush=True)


def late_reverb_removed(alpha, delay, smoothing=0.0):
    """Power less `alpha` × the power `delay` frames earlier (exponentially averaged over the
    past with `smoothing`, as late-reverberation suppression estimates the tail), kept ≥ 10 %."""
    def process(p):
        past = p.copy()
        for t in range(1, len(p) if smoothing else 0):
            past[t] = smoothing * past[t - 1] + (1 - smoothing) * p[t]
        late = np.zeros_like(p)
        late[delay:] = past[:-delay]
        return np.maximum(p - alpha * late, 0.1 * p)
    return process


def survival_row(name, fe, references, clips, degraded):
    """One table row: the share of `references`' peaks and pairs that `fe`'s query peaks keep,
    under each degradation and clean."""
    cells = []
    for d in list(degraded) + ['clean']:
        total = np.zeros(4)
        for (rt, rf), y in zip(references, degraded.get(d, clips)):
            total += survival(rt, rf, *fe.peaks(y, fe.query))
        cells.append('peaks %.0f %%, pairs %.0f %%' % (100 * total[1] / total[0], 100 * total[3] / max(1, total[2])))
    print('| %s | %s |' % (name, ' | '.join(cells)), flush=True)


def processing_table(clips, degraded, references):
    """Survival with the query's power spectrum processed before picking."""
    variants = {
        'as now': None,
        'smoothed over 3 bins (0.5, 1, 0.5)': lambda p: convolve1d(p, [0.5, 1, 0.5], axis=1, mode='nearest'),
        'smoothed over 3 frames': lambda p: uniform_filter1d(p, 3, axis=0, mode='nearest'),
        'smoothed over 5 frames': lambda p: uniform_filter1d(p, 5, axis=0, mode='nearest'),
        'late reverberation removed: 0.5 × the power 6 frames before': late_reverb_removed(0.5, 6),
        'late reverberation removed: 1 × the power 4 frames before': late_reverb_removed(1.0, 4),
        'late reverberation removed: 1 × the past\'s average (0.85 per frame) 4 frames before': late_reverb_removed(1.0, 4, 0.85),
        'stationary noise removed: 1.5 × each bin\'s median': lambda p: np.maximum(p - 1.5 * np.median(p, axis=0), 0.05 * p),
    }
    # The same processing on both sides: references picked from processed power too.
    both_sides = {
        'both sides: late reverberation removed, 0.5 × the power 6 frames before': late_reverb_removed(0.5, 6),
        'both sides: late reverberation removed, 1 × the power 4 frames before': late_reverb_removed(1.0, 4),
        'both sides: late reverberation removed, 1 × the power 6 frames before': late_reverb_removed(1.0, 6),
        'both sides: late reverberation removed, 2 × the power 4 frames before': late_reverb_removed(2.0, 4),
        'both sides: late reverberation removed, 1 × the past\'s average (0.85 per frame) 4 frames before': late_reverb_removed(1.0, 4, 0.85),
    }
    print('| query\'s power spectrum | ' + ' | '.join(degraded) + ' | clean |')
    print('|---|' + '---|' * (len(degraded) + 1))
    for name, process in list(variants.items()) + list(both_sides.items()):
        fe = FrontEnd(process=process)
        refs = [fe.peaks(x, fe.reference) for x in clips] if name in both_sides else references
        survival_row(name, fe, refs, clips, degraded)


TRAINING = {
    'pink noise -3 dB': lambda x: at_snr(x, noise('pink', len(x)), -3),
    'room RT60 0.5 s + noise 10 dB': lambda x: at_snr(room(x, 0.5), noise('white', len(x)), 10),
    'white noise 3 dB': lambda x: at_snr(x, noise('white', len(x)), 3),
}


def selection_table(clips, degraded):
    """Survival when references prefer the peaks that their own audio keeps under `TRAINING`'s
    degradations (other noise than the test's): strength + bonus × survivals, selected as now."""
    fe = FrontEnd()
    picked = []
    for x in clips:
        t, b, strength = fe.candidates(x)
        kept = np.zeros(len(t))
        for degrade in TRAINING.values():
            qt, qf = fe.peaks(degrade(x), fe.query)
            kept += found(t * fe.hop / SR, b * fe.hz, qt, qf, 0.008, 15.625)
        picked.append((t, b, strength, kept))
    print('| reference peaks selected by | ' + ' | '.join(degraded) + ' | clean |')
    print('|---|' + '---|' * (len(degraded) + 1))
    for bonus in (0, 1, 3):
        references = [fe.select(t, b, strength + bonus * kept, fe.reference) for t, b, strength, kept in picked]
        name = 'power (as now)' if bonus == 0 else 'log power + %d × degradations survived (of %d)' % (bonus, len(TRAINING))
        survival_row(name, fe, references, clips, degraded)


def evidence_table(clips16):
    fe = FrontEnd()
    print('| evidence at the right place, standard deviations over chance (median / 10th percentile of clips) | '
          'selected query peaks | all query peaks (what `PeakVerification` reads) | query power ≥ 8× its bin median | evidence points (3 × 3 maxima ≥ 8× median) | points per second |')
    print('|---|---|---|---|---|---|')
    q0, q1 = 3.0, 13.0
    for d, degrade in DEGRADATIONS.items():
        scores = {'peaks': [], 'all peaks': [], 'power': [], 'points': []}
        density = []
        for x in clips16:
            y = degrade(x)[int(q0 * SR):int(q1 * SR)]
            rt, rf = fe.peaks(x, fe.reference)
            qt, qf = fe.peaks(y, fe.query)
            qt = qt + q0
            at, af = fe.peaks(y, (10 ** 6, 10 ** 6))
            at = at + q0
            p = fe.power(y)
            level = p / (np.median(p, axis=0) + 1e-20)
            points = (level >= maximum_filter(level, size=(3, 3))) & (level >= 8)
            points[:, :fe.lo] = False
            points[:, fe.hi:] = False
            pt, pb = np.nonzero(points)
            density.append(len(pt) / (q1 - q0))

            def count(kind, shift):
                inside = (rt + shift >= q0) & (rt + shift < q1 - 0.07)
                t, f = rt[inside] + shift, rf[inside]
                if kind == 'peaks':
                    return found(t, f, qt, qf, 0.008, 15.625).sum(), inside.sum()
                if kind == 'all peaks':
                    return found(t, f, at, af, 0.008, 15.625).sum(), inside.sum()
                if kind == 'points':
                    return found(t, f, q0 + pt * fe.hop / SR, pb * fe.hz, 0.008, 15.625).sum(), inside.sum()
                ti = np.clip(np.round((t - q0) * SR / fe.hop).astype(int), 0, p.shape[0] - 1)
                bi = np.round(f / fe.hz).astype(int)
                best = np.max([level[np.clip(ti + a, 0, p.shape[0] - 1), bi + b] for a in (-1, 0, 1) for b in (-1, 0, 1)], axis=0)
                return (best >= 8).sum(), inside.sum()

            for kind in scores:
                hits, n = count(kind, 0)
                chance = [count(kind, s) for s in (-3, -2, 2, 3)]
                expected = n * sum(c[0] for c in chance) / max(1, sum(c[1] for c in chance))
                scores[kind].append((hits - expected) / np.sqrt(expected + 1))
        print('| %s | %s | %.0f |' % (d, ' | '.join('%.1f / %.1f' % (np.median(v), np.percentile(v, 10)) for v in scores.values()),
                                      np.mean(density)), flush=True)


if __name__ == '__main__':
    known = ['survival', 'loss', 'evidence', 'processing', 'selection']
    counts = [a for a in sys.argv[1:] if a.isdigit()]
    tables = [a for a in sys.argv[1:] if not a.isdigit()] or known
    unknown = [t for t in tables if t not in known]
    if unknown or len(counts) > 1:
        sys.exit('usage: peak_evidence.py [clips] [%s] ...' % '] ['.join(known))
    n = int(counts[0]) if counts else 30
    if not FILES:
        sys.exit('no decoded corpus in benchmarks/cache/decoded: run benchmarks/run.sh recognition first')
    clips = excerpts(n, 10.0)
    degraded = {d: [f(x) for x in clips] for d, f in DEGRADATIONS.items()}
    if 'survival' in tables:
        survival_table(clips, degraded)
        print()
    if 'loss' in tables:
        loss_table(clips, degraded)
        print()
    if 'processing' in tables or 'selection' in tables:
        rooms = dict(degraded, **{'room RT60 0.3 s + noise 5 dB': [at_snr(room(x, 0.3), noise('white', len(x)), 5) for x in clips]})
        if 'processing' in tables:
            now = FrontEnd()
            processing_table(clips, rooms, [now.peaks(x, now.reference) for x in clips])
            print()
        if 'selection' in tables:
            selection_table(clips, rooms)
            print()
    if 'evidence' in tables:
        evidence_table(excerpts(n, 16.0))
