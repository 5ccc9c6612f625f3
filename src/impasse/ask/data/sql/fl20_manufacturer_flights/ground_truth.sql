SELECT CASE WHEN p.manufacturer LIKE 'AIRBUS%' THEN 'AIRBUS' WHEN p.manufacturer LIKE 'MCDONNELL DOUGLAS%' THEN 'MCDONNELL DOUGLAS' ELSE p.manufacturer END AS manufacturer, COUNT(*) AS n FROM flights f JOIN planes p ON p.tailnum = f.tailnum WHERE 1 AND dep_time IS NOT NULL
GROUP BY 1 ORDER BY n DESC LIMIT 3
