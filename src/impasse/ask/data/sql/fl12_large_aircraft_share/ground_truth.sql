SELECT f.carrier, ROUND(AVG(CASE WHEN p.seats >= 200 THEN 1.0 ELSE 0.0 END), 4) AS share
FROM flights f JOIN planes p ON p.tailnum = f.tailnum WHERE f.month IN (5,6,7,8,9) GROUP BY f.carrier
