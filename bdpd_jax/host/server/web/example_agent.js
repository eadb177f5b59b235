function decide(obs, memory) {
  // -- Initialise memory on first turn -------------------------------
  if (!memory.stockHistory)   memory.stockHistory   = [];
  if (!memory.harvestHistory) memory.harvestHistory = [];
  if (memory.turn === undefined) memory.turn = 0;

  memory.turn += 1;

  // -- Record current observation -------------------------------------
  const stock    = obs.commonsStock   ?? 100;   // may be noisy
  const capacity = obs.myCapacity     ?? 1.0;   // 1 + 0.05 * myWealth
  const nPlayers = obs.nPlayers       ?? 4;

  memory.stockHistory.push(stock);

  // Keep only the last 5 observations
  const WINDOW = 5;
  if (memory.stockHistory.length > WINDOW) {
    memory.stockHistory.shift();
  }

  // -- Estimate depletion trend ---------------------------------------
  // Simple linear slope over the observation window (OLS, x = turn index)
  let trend = 0;
  const hist = memory.stockHistory;
  if (hist.length >= 2) {
    const n    = hist.length;
    const xBar = (n - 1) / 2;
    const yBar = hist.reduce((a, b) => a + b, 0) / n;
    let num = 0, den = 0;
    for (let i = 0; i < n; i++) {
      num += (i - xBar) * (hist[i] - yBar);
      den += (i - xBar) ** 2;
    }
    trend = den > 0 ? num / den : 0;
  }

  // -- Sustainable share heuristic ------------------------------------
  // Naive sustainable share: each player takes 1/nPlayers of regeneration.
  // Regeneration is not directly observed (hidden), so we estimate it as
  // regenRate * stock * (1 - stock/K), where K=150 is assumed known.
  const K          = 150;
  const regenEst   = 0.12 * stock * (1 - stock / K);
  const myShareSus = regenEst / nPlayers;

  // -- Harvest decision -----------------------------------------------
  // Base: sustainable share, capped by capacity.
  let harvest = Math.min(myShareSus, capacity);

  // If trend is strongly negative, further reduce by the severity of decline.
  if (trend < -2) {
    const reductionFactor = Math.max(0.3, 1 + trend / stock);
    harvest *= reductionFactor;
  }

  // Never harvest less than 0.1. The "strategic vacuum" emerges in the
  // Arena even without an explicit rule: yielding fully to other agents
  // cedes the surplus to them, so a small positive floor preserves a
  // minimal share. (The card-game version of this idea — the explicit
  // Vacuum Effect — is documented in §2.2.)
  harvest = Math.max(0.1, harvest);

  // -- Log to private memory ------------------------------------------
  memory.harvestHistory.push(parseFloat(harvest.toFixed(3)));
  memory.lastTrend = parseFloat(trend.toFixed(3));

  return harvest;
}
